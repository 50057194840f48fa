#!/usr/bin/env bash
# Install modelport into ./.venv with the given extras (e.g. "local" or "local,test").
# llama-cpp-python (the embedded model's runtime) builds from source: about 6 minutes on 2 cores the first
# time; pip caches the built wheel, so later installs take seconds. Progress is shown while it builds.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-local}"
python=${PYTHON:-python3}

if [ ! -x .venv/bin/python ]; then
  echo "==> creating virtualenv .venv"
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip

if ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
  echo "==> installing llama-cpp-python (builds from source the first time: ~6 min on 2 cores; cached afterwards)"
  export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
  # -v makes pip show the compiler's [n/total] steps; keep only those lines, as progress.
  .venv/bin/python -m pip install -v "llama-cpp-python>=0.3" 2>&1 \
    | grep --line-buffered -E '^\s*\[[0-9]+/[0-9]+\]|^Successfully|ERROR|error:' \
    | sed -u -E 's/^\s*(\[[0-9]+\/[0-9]+\]).*/    building llama.cpp \1/'
  .venv/bin/python -c "import llama_cpp" || { echo "llama-cpp-python failed to install" >&2; exit 1; }
fi

echo "==> installing modelport[$extras]"
.venv/bin/python -m pip install --quiet -e ".[$extras]"
echo "==> installed"
