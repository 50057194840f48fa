"""deploy/kubernetes/ checked offline by the tools a cluster's operators use: every overlay renders with
kubectl's kustomize, every object validates against the Kubernetes schemas, checkov fails no check that
docs/deploy.md does not explain; the Dockerfile the manifests' image builds from is hadolint-clean."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.deploy_tools import OVERLAYS, ROOT, render, run

# The oldest Kubernetes release the manifests support and the newest the validator knows.
KUBERNETES_VERSIONS = ("1.30.0", "1.37.0")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("rendered")
    files = {}
    for overlay in OVERLAYS:
        files[overlay] = folder / f"{overlay}.yaml"
        files[overlay].write_text(render(overlay))
    return files


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_rendered_object_validates_against_the_kubernetes_schemas(
    rendered: dict[str, Path], version: str
) -> None:
    done = run("kubernetes-validate", "--strict", "--kubernetes-version", version, *map(str, rendered.values()))
    passed = re.findall(r"passed for resource (\S+)", done.stdout + done.stderr)
    # Every object of every overlay was checked, not skipped for want of a schema.
    assert len(passed) == sum(p.read_text().count("\nkind: ") for p in rendered.values())
    assert "deployment/modelport-serve" in passed and "job/modelport-migrate" in passed


def test_the_schema_check_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: two}\n")
    assert run("kubernetes-validate", "--strict", str(bad), check=False).returncode != 0


def _explained_checks() -> set[str]:
    """The checkov checks docs/deploy.md's Kubernetes section explains (a table row per check)."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    section = text.split("## Kubernetes", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `?(CKV_K8S_\d+)`? \|", section, flags=re.MULTILINE))


def _checkov(folder: Path) -> list[dict[str, Any]]:
    # --skip-download: no call to the vendor's service for guidelines (CI reaches no such host).
    done = run(
        "checkov", "-d", str(folder), "--framework", "kubernetes", "--quiet", "--compact", "--skip-download",
        "-o", "json", check=False,
    )  # fmt: skip
    if done.returncode not in (0, 1):  # 1: some check failed, judged below
        pytest.fail(f"checkov exited {done.returncode}:\n{done.stderr}")
    reports = json.loads(done.stdout)
    return reports if isinstance(reports, list) else [reports]


def test_checkov_fails_only_checks_the_deploy_doc_explains(rendered: dict[str, Path]) -> None:
    folder = next(iter(rendered.values())).parent
    reports = _checkov(folder)
    assert sum(r["summary"]["passed"] for r in reports) > 500  # it did look at the objects
    failed = {(c["check_id"], c["resource"]) for r in reports for c in r["results"]["failed_checks"]}
    unexplained = sorted(f for f in failed if f[0] not in _explained_checks())
    assert not unexplained, f"checkov failures docs/deploy.md does not explain: {unexplained}"


def test_dockerfile_is_hadolint_clean() -> None:
    done = run("hadolint", "--config", ".hadolint.yaml", "--no-color", "Dockerfile", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
