#!/usr/bin/env bash
# Debian's Chromium for the console's browser tests (Playwright drives /usr/bin/chromium; Playwright's own
# browser download is not used). Installs it when missing; the tests fail, never skip, without it.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "==> chromium present: $(/usr/bin/chromium --version 2>/dev/null | head -1)"
  exit 0
fi
echo "==> installing chromium (apt-get)"
sudo=""
if [ "$(id -u)" != "0" ]; then
  sudo="sudo"
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
/usr/bin/chromium --version 2>/dev/null | head -1
