#!/usr/bin/env bash
# Debian's valgrind for the instruction-count guard (`bench/instr_guard.py`, run by scripts/test.sh): callgrind
# counts the instructions the gateway executes per request, independent of the machine's load. Installs it when
# missing; the guard fails, never skips, without it.
set -euo pipefail
if command -v valgrind >/dev/null && command -v callgrind_control >/dev/null; then
  echo "==> valgrind present: $(valgrind --version)"
  exit 0
fi
echo "==> installing valgrind (apt-get)"
sudo=""
if [ "$(id -u)" != "0" ]; then
  sudo="sudo"
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq valgrind >/dev/null
valgrind --version
