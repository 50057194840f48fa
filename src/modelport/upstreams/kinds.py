"""What each upstream kind speaks and needs: all from the protocol packages (`protocols.UPSTREAM_KINDS`,
each codec's `upstream_kinds`); this module only reads them for a deployment."""

from __future__ import annotations

from modelport.catalog_spec import Deployment, TextModel
from modelport.core.codec import ProtocolCodec, UpstreamKindSpec
from modelport.protocols import UPSTREAM_KINDS


def spec_of(deployment: Deployment) -> UpstreamKindSpec:
    return UPSTREAM_KINDS[deployment.kind][1]


def codec_of(deployment: Deployment) -> ProtocolCodec:
    """The codec of the protocol `deployment` speaks."""
    return UPSTREAM_KINDS[deployment.kind][0]


def deployment_max_output(model: TextModel, deployment: Deployment) -> int:
    """The most output `deployment` may produce for `model`: the catalog's figure, else its kind's default
    (large enough for the reasoning models of each kind: reasoning tokens count as output, and the balance
    hold and the credit check assume it; docs/api/text-gateway.md, Billing)."""
    return model.max_output_tokens or spec_of(deployment).default_max_output


def model_max_output(model: TextModel) -> int:
    """The most output any deployment of `model` may produce (what the balance hold assumes uncapped)."""
    return model.max_output_tokens or max(spec_of(d).default_max_output for d in model.deployments)


def _base_url(deployment: Deployment) -> str:
    base = deployment.base_url or spec_of(deployment).default_base_url
    if not base:
        raise ValueError(f"deployment {deployment.model}: base_url is required for {deployment.kind}")
    return base


def endpoint_url(deployment: Deployment) -> str:
    return _base_url(deployment) + codec_of(deployment).upstream_path


def count_tokens_url(deployment: Deployment) -> str | None:
    """The kind's own token counting endpoint; None when it has none."""
    path = spec_of(deployment).count_tokens_path
    return None if path is None else _base_url(deployment) + path


def models_url(deployment: Deployment) -> str:
    """The upstream's model list (free at every provider): what a health probe calls."""
    return _base_url(deployment) + spec_of(deployment).models_path


def auth_headers(deployment: Deployment, api_key: str | None) -> dict[str, str]:
    return spec_of(deployment).auth_headers(api_key) if api_key else {}
