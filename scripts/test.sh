#!/usr/bin/env bash
# Install the test dependencies and run the whole suite: lint, types, tests.
# Needs PostgreSQL (MODELPORT_TEST_POSTGRES_URL, default root@127.0.0.1:5432/test) and Redis
# (MODELPORT_TEST_REDIS_URL, default redis://127.0.0.1:6379/0); tests that need them fail, never skip.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh local,test
# Claude Code and Codex CLI for the agents_cli tests (they fail, never skip, without them).
bash scripts/install_agents.sh
# Debian's Chromium for the console's browser tests (marker `browser`; they fail, never skip, without it).
bash scripts/install_browser.sh
# Debian's valgrind for the instruction-count guard below.
bash scripts/install_valgrind.sh
echo "==> ruff (lint and format)"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "==> import layers (lint-imports)"
.venv/bin/lint-imports --no-cache
echo "==> mypy (strict): src, tests, bench"
.venv/bin/mypy
.venv/bin/mypy --strict --explicit-package-bases tests
MYPYPATH=bench .venv/bin/mypy --strict bench/*.py
echo "==> instruction-count guard: modelport / bare proxy per request (bench/instr_guard.py, ~2-3 minutes)"
# The issue's 10 %: since batch writes on SQLite take one hand-off each, four runs spread by at most 2 %
# (bench/README.md). A run over the line is measured once more, and only two in a row fail: a regression
# fails both, a timer landing in the counted window of one does not.
.venv/bin/python bench/instr_guard.py || { echo "==> over the line: measuring once more"; .venv/bin/python bench/instr_guard.py; }
echo "==> pytest (with a coverage report; the floor is fail_under in pyproject.toml [tool.coverage.report])"
# The floor holds for the whole suite; a run given arguments (a subset) reports coverage without it.
floor=()
if [ "$#" -gt 0 ]; then floor=(--cov-fail-under=0); fi
.venv/bin/python -m pytest --cov --cov-report=term-missing:skip-covered "${floor[@]}" "$@"
