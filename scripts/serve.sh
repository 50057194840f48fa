#!/usr/bin/env bash
# Quick start: install everything, then run both hosts on the embedded defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh local
exec .venv/bin/modelport serve "$@"
