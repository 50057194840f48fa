#!/usr/bin/env bash
# Quick start: install, then run both hosts on the embedded defaults.
# The first time, llama-cpp-python (the embedded text model's runtime) builds in the background while
# both hosts already serve; the banner names its progress log, and the model appears in /v1/models as
# soon as it can answer. Later starts skip the install.
set -euo pipefail
cd "$(dirname "$0")/.."
LLAMA_BUILD=background bash scripts/install.sh
exec .venv/bin/modelport serve "$@"
