"""The banner `modelport serve` prints (`process/cli/banner.banner_lines`): a pure function of the settings and
what start-up found."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from modelport.process.bootstrap import DemoInfo
from modelport.process.cli.banner import StartupFacts, banner_lines
from modelport.settings import Settings

READY = "embedded text model: ready (llama-cpp-python installed; the model loads on its first request)"


@pytest.fixture(autouse=True)
def _no_modelport_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in os.environ:
        if name.startswith("MODELPORT_"):
            monkeypatch.delenv(name)


def test_a_plain_start_names_both_hosts_the_console_and_the_reference(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, host="127.0.0.1", media_port=8080, text_port=8081)
    assert banner_lines(settings, StartupFacts(processes=1, local_model=READY)) == [
        "media host:    http://127.0.0.1:8080   (public URL http://127.0.0.1:8080)",
        "text gateway:  http://127.0.0.1:8081   (OpenAI SDK base_url http://127.0.0.1:8081/v1,"
        " Anthropic SDK base_url http://127.0.0.1:8081)",
        "console:       http://127.0.0.1:8080/console/   (an account or a team API key)",
        "API reference: http://127.0.0.1:8080/docs",
        READY,
    ]


def test_warnings_metrics_and_a_new_demo_key_each_get_their_line(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path, host="0.0.0.0", media_port=1, text_port=2, public_media_url="http://media.example"
    )
    facts = StartupFacts(
        processes=2,
        local_model="embedded text model: not available",
        metrics_url="http://0.0.0.0:9100/metrics",
        data_dir_warning="warning: the data directory is readable by others",
        demo=DemoInfo(team_name="demo", new_key="sk-new", key_prefixes=["sk-new"]),
    )
    assert banner_lines(settings, facts) == [
        "media host:    http://0.0.0.0:1   (public URL http://media.example)",
        "text gateway:  http://0.0.0.0:2   (OpenAI SDK base_url http://0.0.0.0:2/v1,"
        " Anthropic SDK base_url http://0.0.0.0:2)",
        "console:       http://media.example/console/   (an account or a team API key)",
        "API reference: http://media.example/docs",
        "metrics:       http://0.0.0.0:9100/metrics   (Prometheus text format)",
        "warning: the data directory is readable by others",
        "warning: MODELPORT_PUBLIC_MEDIA_URL is plain http://; use https:// in production",
        "warning: --workers > 1 without MODELPORT_REDIS_URL: rate limits are counted per process",
        "embedded text model: not available",
        "demo API key:  sk-new   (team 'demo'; shown once, keep it)",
    ]


def test_a_demo_team_with_keys_already_names_their_prefixes(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, redis_url="redis://127.0.0.1:6379/0")
    demo = DemoInfo(team_name="demo", new_key=None, key_prefixes=["sk-a", "sk-b"])
    lines = banner_lines(settings, StartupFacts(processes=4, local_model=READY, demo=demo))
    assert (
        lines[-1] == "demo team 'demo' has keys sk-a..., sk-b...; make a new one with: modelport admin key create demo"
    )
    assert not any("MODELPORT_REDIS_URL" in line for line in lines)
