"""The deployment checks' tools (kubectl, kubernetes-validate, checkov, hadolint), installed by
scripts/install_deploy_checks.sh into their own virtualenv. A missing one fails the test that needs it,
naming the script: these checks never skip."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / ".tools" / "deploy-checks" / "bin"
KUSTOMIZE = ROOT / "deploy" / "kubernetes"
OVERLAYS = ("production", "demo")


def tool(name: str) -> Path:
    path = TOOLS / name
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `bash scripts/install_deploy_checks.sh` (scripts/test.sh does)")
    return path


def run(name: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Runs a tool offline, from the repository's root; a failure shows its output."""
    done = subprocess.run([str(tool(name)), *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    if check and done.returncode != 0:
        pytest.fail(f"{name} {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def render(overlay: str) -> str:
    """`kubectl kustomize` of one overlay: the YAML stream that `kubectl apply -k` would send."""
    return run("kubectl", "kustomize", str(KUSTOMIZE / "overlays" / overlay)).stdout
