"""The asset endpoints' errors, with the spec's exact messages."""

from __future__ import annotations

from typing import Any

from modelport.errors import InvalidParameters, ServiceUnavailable


class AssetRejected(InvalidParameters):
    """400 `Invalid parameters: asset was rejected by the provider`, plus a `reason` field saying why."""

    def __init__(self, reason: str) -> None:
        super().__init__("asset was rejected by the provider")
        self.reason = reason

    def media_body(self) -> dict[str, Any]:
        return {**super().media_body(), "reason": self.reason}


class AssetServiceOff(ServiceUnavailable):
    def __init__(self) -> None:
        super().__init__("asset service is not activated for this account")


class ProviderUnavailable(ServiceUnavailable):
    """503: timeouts, 5xx, a refused connection or an open circuit breaker at the provider."""

    def __init__(self) -> None:
        super().__init__("asset provider is temporarily unavailable")
