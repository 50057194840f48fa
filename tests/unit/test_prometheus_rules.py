"""docs/alerts/prometheus-rules.yml: every rule names metrics (and labels) that modelport exports, and, when
promtool is installed (Debian's `prometheus` package), `promtool check rules` accepts the file."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelport import metrics

RULES = Path(__file__).resolve().parents[2] / "docs" / "alerts" / "prometheus-rules.yml"
_METRIC = re.compile(r"\bmodelport_[a-z0-9_]+")
_SELECTOR = re.compile(r"\b(modelport_[a-z0-9_]+)\s*\{([^}]*)\}")
_MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
_GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
_SUFFIXES = {"counter": ("_total",), "gauge": ("",), "histogram": ("_bucket", "_sum", "_count")}


def exported() -> dict[str, set[str]]:
    """Each sample name modelport exports, with its label names (`le` for histogram buckets)."""
    names: dict[str, set[str]] = {}
    for family in vars(metrics).values():
        if isinstance(family, metrics.Family):
            metric: Any = family.metric
            for suffix in _SUFFIXES[metric._type]:
                names[metric._name + suffix] = set(metric._labelnames) | ({"le"} if suffix == "_bucket" else set())
    return names


def rules() -> list[dict[str, Any]]:
    loaded = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    found = [rule for group in loaded["groups"] for rule in group["rules"]]
    assert found, "no rules"
    return found


def test_every_metric_and_label_in_the_rules_is_exported() -> None:
    names = exported()
    assert "modelport_http_requests_total" in names and "modelport_write_flush_seconds_bucket" in names
    for rule in rules():
        expr = rule["expr"]
        used = set(_METRIC.findall(expr))
        assert used, rule["alert"]
        assert used <= names.keys(), (rule["alert"], used - names.keys())
        all_labels = set().union(*(names[m] for m in used))
        for metric, matchers in _SELECTOR.findall(expr):
            assert set(_MATCHER.findall(matchers)) <= names[metric], (rule["alert"], metric, matchers)
        for grouping in _GROUPING.findall(expr):
            labels = {label.strip() for label in grouping.split(",") if label.strip()}
            assert labels <= all_labels, (rule["alert"], labels - all_labels)


def test_every_rule_is_an_alert_with_a_summary() -> None:
    seen: set[str] = set()
    for rule in rules():
        assert rule["alert"] not in seen and rule["alert"].startswith("Modelport")
        seen.add(rule["alert"])
        assert rule["labels"]["severity"] in {"page", "warning", "info"}
        assert rule["annotations"]["summary"]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (Debian: prometheus)")
def test_promtool_accepts_the_rules() -> None:
    checked = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
