"""Imports run downwards only and no packages import each other in a cycle (contracts in pyproject.toml).

Runs `lint-imports` on the source tree, and once on a copy with one upward import added, to show the check
can fail.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(cwd / "pyproject.toml")],
        cwd=cwd,
        env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_source_keeps_every_import_contract(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "src" / "modelport", tmp_path / "modelport")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    result = _lint(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_an_upward_import_breaks_the_layers_contract(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "src" / "modelport", tmp_path / "modelport")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    deps = tmp_path / "modelport" / "web" / "deps.py"
    deps.write_text(deps.read_text("utf-8") + "\nimport modelport.apps.text  # noqa\n", "utf-8")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "modelport.web.deps -> modelport.apps.text" in result.stdout


def test_a_cycle_between_sibling_packages_breaks_the_acyclic_contract(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "src" / "modelport", tmp_path / "modelport")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    # core imports protocols, which imports core: a cycle inside one layer-free pair.
    events = tmp_path / "modelport" / "core" / "events.py"
    events.write_text(events.read_text("utf-8") + "\nimport modelport.protocols.openai_chat.finish  # noqa\n", "utf-8")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "No import cycles" in result.stdout and "BROKEN" in result.stdout
