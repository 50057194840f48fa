"""Upstream failures become the gateway's errors in one place: statuses, bodies, and transport exceptions."""

from __future__ import annotations

import aiohttp
import orjson
import pytest

from modelport.core.codec import UpstreamFault
from modelport.errors import InvalidParameters, ModelUnavailable, UpstreamError
from modelport.gateway.upstream_errors import client_error_for, exhausted_error, is_deployment_fault, is_retryable
from modelport.protocols import get_codec
from modelport.upstreams.transport import UpstreamStreamBroken, UpstreamUnreachable, http_errors_as

RESPONSES = get_codec("openai_responses")


def body(**error: object) -> UpstreamFault | None:
    """An OpenAI error body as the upstream's codec reads it."""
    return RESPONSES.upstream_fault(orjson.dumps({"error": error}))


@pytest.mark.parametrize("status", [404, 408, 409, 429, 500, 502, 503, 504, 529])
def test_statuses_worth_another_deployment(status: int) -> None:
    assert is_retryable(status)


@pytest.mark.parametrize("status", [400, 401, 403, 413, 422])
def test_statuses_that_are_final(status: int) -> None:
    assert not is_retryable(status)


def test_an_unknown_model_upstream_is_the_deployments_fault() -> None:
    assert is_deployment_fault(404, None)
    assert is_deployment_fault(400, body(code="model_not_found", message="no such model"))
    assert not is_deployment_fault(400, body(code="invalid_value", message="bad"))
    assert not is_deployment_fault(400, RESPONSES.upstream_fault(b"not json"))


def test_a_refused_request_is_the_clients_400_with_the_upstream_message_and_param() -> None:
    error = client_error_for(400, body(message="max_tokens is too large", param="max_tokens"))
    assert isinstance(error, InvalidParameters) and error.status == 400
    assert "max_tokens is too large" in error.text_message and error.param == "max_tokens"


def test_an_anthropic_error_body_gives_its_message() -> None:
    raw = orjson.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too big"}})
    error = client_error_for(400, get_codec("anthropic_messages").upstream_fault(raw))
    assert isinstance(error, InvalidParameters) and error.text_message == "max_tokens: too big"


def test_rejected_credentials_never_reach_the_client_as_401() -> None:
    error = client_error_for(401, body(message="Incorrect API key provided: sk-abc"))
    assert isinstance(error, UpstreamError) and error.status == 502
    assert "sk-abc" not in error.text_message


def test_when_every_deployment_fails() -> None:
    limited = exhausted_error(429, 7)
    assert isinstance(limited, ModelUnavailable) and limited.headers["Retry-After"] == "7"
    assert exhausted_error(None, 1).status == 502
    assert exhausted_error(504, 1).status == 504 and exhausted_error(500, 1).status == 502


@pytest.mark.parametrize(
    "raised", [TimeoutError(), aiohttp.ClientConnectionError("reset"), ConnectionRefusedError(111, "refused")]
)
def test_transport_failures_are_mapped_by_one_context_manager(raised: Exception) -> None:
    with pytest.raises(UpstreamUnreachable) as caught, http_errors_as(UpstreamUnreachable):
        raise raised
    assert caught.value.__cause__ is raised and str(caught.value) == type(raised).__name__
    with pytest.raises(UpstreamStreamBroken), http_errors_as(UpstreamStreamBroken):
        raise raised


def test_other_exceptions_pass_through() -> None:
    with pytest.raises(ValueError), http_errors_as(UpstreamUnreachable):
        raise ValueError("ours")
