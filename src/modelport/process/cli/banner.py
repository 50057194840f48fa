"""What `modelport serve` prints once it listens: a pure function of what start-up found, checked by a unit test."""

from __future__ import annotations

from dataclasses import dataclass

from modelport.process.bootstrap import DemoInfo
from modelport.settings import Settings


@dataclass(frozen=True, slots=True)
class StartupFacts:
    """What start-up found, beside the settings (with the bound ports): each a line of the banner or none."""

    processes: int
    local_model: str  # `local_model_line`: whether the embedded text model can answer now
    metrics_url: str | None = None
    data_dir_warning: str | None = None
    demo: DemoInfo | None = None
    # A setup link for the first operator account, while no operator account exists.
    first_operator_url: str | None = None


def banner_lines(settings: Settings, facts: StartupFacts) -> list[str]:
    media_url = f"http://{settings.host}:{settings.media_port}"
    text_url = f"http://{settings.host}:{settings.text_port}"
    lines = [
        f"media host:    {media_url}   (public URL {settings.public_media_url or media_url})",
        f"text gateway:  {text_url}   (OpenAI SDK base_url {text_url}/v1, Anthropic SDK base_url {text_url})",
        f"console:       {settings.public_media_url or media_url}/console/   (an account or a team API key)",
        f"API reference: {settings.public_media_url or media_url}/docs",
    ]
    if facts.metrics_url is not None:
        lines.append(f"metrics:       {facts.metrics_url}   (Prometheus text format)")
    if facts.data_dir_warning is not None:
        lines.append(facts.data_dir_warning)
    if settings.public_media_url and settings.public_media_url.startswith("http://"):
        lines.append("warning: MODELPORT_PUBLIC_MEDIA_URL is plain http://; use https:// in production")
    allowed = sorted(settings.net.allowed_pairs())
    if allowed:
        lines.append(
            f"warning: MODELPORT_NET__ALLOW_HOSTS lets user URLs reach {', '.join(allowed)}"
            " (no address check, http allowed)"
        )
    if settings.net.ca_bundle is not None:
        lines.append(f"user URL fetches also trust the CA file {settings.net.ca_bundle} (MODELPORT_NET__CA_BUNDLE)")
    if facts.processes > 1 and not settings.redis_url:
        lines.append("warning: --workers > 1 without MODELPORT_REDIS_URL: rate limits are counted per process")
    if facts.first_operator_url is not None:
        lines.append(f"first operator: set up the operator account at {facts.first_operator_url}   (works once)")
    lines.append(facts.local_model)
    demo = facts.demo
    if demo is not None and demo.new_key:
        lines.append(f"demo API key:  {demo.new_key}   (team {demo.team_name!r}; shown once, keep it)")
    elif demo is not None:
        lines.append(
            f"demo team {demo.team_name!r} has keys {', '.join(p + '...' for p in demo.key_prefixes)}; "
            f"make a new one with: modelport admin key create {demo.team_name}"
        )
    return lines


def local_model_line(settings: Settings) -> str:
    """Says whether the embedded text model can answer now, or where its background build shows progress."""
    from modelport.upstreams.local_runtime import build_log, runtime_installed

    if runtime_installed():
        return "embedded text model: ready (llama-cpp-python installed; the model loads on its first request)"
    log = build_log(settings.data_dir)
    if log is not None:
        return (
            f"embedded text model: llama-cpp-python is building in the background (progress: {log}); "
            "the model is listed in /v1/models as soon as it can answer"
        )
    return (
        "embedded text model: not available (llama-cpp-python is not installed: bash scripts/install.sh local); "
        "configured upstreams answer"
    )
