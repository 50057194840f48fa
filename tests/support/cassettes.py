"""Load the recorded real traffic under ``shared/conformance/cassettes`` (vcrpy YAML, version 1).

pydantic-ai's serializer stores JSON bodies as ``parsed_body`` (a YAML rendering of the JSON) and keeps
other bodies (SSE streams, downloaded images) verbatim in ``body.string``. Headers are lists of values.
The data is read in place from the shared folder, never copied into the repo.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tests.support.conformance_data import CONFORMANCE_DIR

CASSETTES_DIR = CONFORMANCE_DIR / "cassettes" / "pydantic-ai"
SSE_DIR = CONFORMANCE_DIR / "sse"

# The C loader is ~10x faster on the multi-megabyte files; fall back when libyaml is missing.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(path: Path) -> Any:
    with path.open("rb") as fh:
        return yaml.load(fh, Loader=_LOADER)


@dataclass(frozen=True)
class Interaction:
    """One recorded HTTP exchange."""

    cassette: str
    position: int
    method: str
    uri: str
    request_headers: dict[str, list[str]]
    request_json: Any
    status: int
    response_headers: dict[str, list[str]]
    response_json: Any
    response_raw: str | bytes | None = field(repr=False, default=None)

    @property
    def id(self) -> str:
        """A stable test id: ``<cassette stem>#<position>``."""
        return f"{self.cassette}#{self.position}"

    @property
    def path(self) -> str:
        """The URL path without scheme, host and query (``/v1/chat/completions``)."""
        rest = self.uri.split("://", 1)[-1]
        path = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
        return path.split("?", 1)[0]

    def response_header(self, name: str) -> str | None:
        for key, values in self.response_headers.items():
            if key.lower() == name.lower() and values:
                return values[0]
        return None

    @property
    def is_sse(self) -> bool:
        content_type = self.response_header("content-type") or ""
        return content_type.startswith("text/event-stream") or (
            isinstance(self.response_raw, str) and self.response_raw.lstrip().startswith(("data:", "event:"))
        )

    @property
    def sse_body(self) -> str:
        """The verbatim SSE body of a streamed response."""
        if not isinstance(self.response_raw, str):
            raise ValueError(f"{self.id}: response is not a text body")
        return self.response_raw


def _headers(raw: Any) -> dict[str, list[str]]:
    if not isinstance(raw, dict):
        return {}
    return {str(k): [str(v) for v in (vs if isinstance(vs, list) else [vs])] for k, vs in raw.items()}


@cache
def load_cassette(path: Path) -> tuple[Interaction, ...]:
    """All interactions of one cassette file, in recorded order."""
    doc = load_yaml(path)
    out = []
    for i, item in enumerate(doc.get("interactions") or []):
        req, resp = item["request"], item["response"]
        body = resp.get("body") or {}
        out.append(
            Interaction(
                cassette=path.stem,
                position=i,
                method=str(req.get("method", "")),
                uri=str(req.get("uri", "")),
                request_headers=_headers(req.get("headers")),
                request_json=req.get("parsed_body"),
                status=int((resp.get("status") or {}).get("code", 0)),
                response_headers=_headers(resp.get("headers")),
                response_json=resp.get("parsed_body"),
                response_raw=body.get("string") if isinstance(body, dict) else None,
            )
        )
    return tuple(out)


def cassette_files(protocol: str) -> list[Path]:
    """The cassette files of one protocol folder (``openai_chat``, ``openai_responses``,
    ``anthropic_messages``), sorted by name."""
    folder = CASSETTES_DIR / protocol
    files = sorted(folder.glob("*.yaml"))
    if not files:
        raise FileNotFoundError(f"no cassettes under {folder}")
    return files


def interactions(protocol: str, *, path: str | None = None, method: str = "POST") -> list[Interaction]:
    """Every recorded API call of a protocol folder (skips e.g. the image downloads of the
    ``force_download`` cassettes). `path` narrows to one endpoint path."""
    found = []
    for file in cassette_files(protocol):
        for it in load_cassette(file):
            if it.method == method and (path is None or it.path == path):
                found.append(it)
    return found


def sse_file(*parts: str) -> str:
    """A raw SSE body under ``shared/conformance/sse`` (e.g. ``sse_file("extracted", "x.sse")``)."""
    return SSE_DIR.joinpath(*parts).read_text(encoding="utf-8")
