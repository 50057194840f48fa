"""Background Responses (`background: true`): the protocol's side of `core.codec.BackgroundWire`; the
gateway keeps the rows and runs them (`gateway/background_responses.py`).

A background response answers at once with its response object, status `queued`; the work then streams
through the gateway like any `stream: true` request, and the client polls the object or streams its
events (each with the `sequence_number` the client resumes from with `starting_after`).
"""

from __future__ import annotations

import time
from typing import Any

from modelport.core.codec import BackgroundWire
from modelport.core.messages import CanonicalRequest
from modelport.errors import InvalidParameters, ServiceError
from modelport.protocols.openai_responses.echo import echo_fields
from modelport.protocols.openai_responses.response import response_object

# Where a background response ends; `queued` and `in_progress` are on the way.
FINISHED = frozenset({"completed", "failed", "cancelled", "incomplete"})
# The stream events whose `response` is the final object, and its status.
_ENDS = {"response.completed": "completed", "response.incomplete": "incomplete", "response.failed": "failed"}


def asks(body: dict[str, Any]) -> bool:
    value = body.get("background")
    if value is not None and not isinstance(value, bool):
        raise InvalidParameters("background must be a boolean", param="background")
    return value is True


def unstored() -> Exception:
    return InvalidParameters("Background responses require store=true (store: false was given).", param="store")


def run_body(body: dict[str, Any]) -> dict[str, Any]:
    """The body a background run sends through the gateway: streamed, stored, not in the background again."""
    out = {k: v for k, v in body.items() if k not in ("background", "stream_options")}
    out["stream"] = True
    return out


def queued(rid: str, model: str, request: CanonicalRequest) -> dict[str, Any]:
    """The response object a background request answers with at once."""
    fields = echo_fields(request)
    fields["background"] = True
    fields["store"] = True
    return response_object(rid=rid, model=model, created=int(time.time()), status="queued", output=[], fields=fields)


def with_status(response: dict[str, Any], status: str, error: dict[str, Any] | None = None) -> dict[str, Any]:
    out = {**response, "status": status, "background": True}
    if error is not None:
        out["error"] = error
    return out


def error_of(exc: ServiceError) -> dict[str, Any]:
    """A failed run's `error` (the response object's shape: code and message)."""
    code = exc.code or ("rate_limit_exceeded" if exc.status == 429 else "server_error")
    return {"code": code, "message": exc.text_message}


def interrupted() -> dict[str, Any]:
    return {"code": "server_error", "message": "The response's run ended before the model finished."}


def event(data: dict[str, Any], rid: str, sequence_number: int) -> dict[str, Any]:
    """A stream event as the background client sees it: numbered in this response's own sequence, its
    response object (lifecycle events) with this response's id and `background` true."""
    out = {**data, "sequence_number": sequence_number}
    response = out.get("response")
    if isinstance(response, dict):
        out["response"] = {**response, "id": rid, "background": True, "store": True}
    return out


def final(event_name: str | None, data: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(status, response object) when this event ends the run."""
    kind = data.get("type") if event_name is None else event_name
    status = _ENDS.get(kind) if isinstance(kind, str) else None
    response = data.get("response")
    if status is None or not isinstance(response, dict):
        return None
    return str(response.get("status") or status), response


def failed_event(response: dict[str, Any], rid: str, sequence_number: int) -> tuple[str, dict[str, Any]]:
    """The event that ends the stream of a run that ended without a final response of its own."""
    return "response.failed", event({"type": "response.failed", "response": response}, rid, sequence_number)


def error_in(event_name: str | None, data: dict[str, Any]) -> dict[str, Any] | None:
    """The error an in-stream `error` event reports (None: not one)."""
    if (event_name or data.get("type")) != "error":
        return None
    return {"code": str(data.get("code") or "server_error"), "message": str(data.get("message") or "")}


def not_background() -> Exception:
    return InvalidParameters("Only responses created with background=true can be cancelled.", param="response_id")


def finished_already(status: str) -> Exception:
    return InvalidParameters(f"Cannot cancel a {status} response.", param="response_id")


BACKGROUND_WIRE = BackgroundWire(
    asks=asks,
    unstored=unstored,
    run_body=run_body,
    queued=queued,
    with_status=with_status,
    error_of=error_of,
    interrupted=interrupted,
    event=event,
    final=final,
    failed_event=failed_event,
    error_in=error_in,
    finished=FINISHED,
    not_background=not_background,
    finished_already=finished_already,
)
