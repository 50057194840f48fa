#!/usr/bin/env bash
# Install the test dependencies and run the whole suite: lint, types, tests.
# Needs PostgreSQL (MODELPORT_TEST_POSTGRES_URL, default root@127.0.0.1:5432/test) and Redis
# (MODELPORT_TEST_REDIS_URL, default redis://127.0.0.1:6379/0); tests that need them fail, never skip.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh local,test
echo "==> ruff"
.venv/bin/ruff check .
echo "==> mypy (strict): src, tests, bench"
.venv/bin/mypy
.venv/bin/mypy --strict --explicit-package-bases tests
MYPYPATH=bench .venv/bin/mypy --strict bench/*.py
echo "==> pytest"
.venv/bin/python -m pytest "$@"
