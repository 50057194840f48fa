"""Whether the embedded model's runtime (llama-cpp-python) is installed, re-checked while it is not.

On a first start `scripts/serve.sh` serves at once and builds llama-cpp-python in the background (it
compiles llama.cpp: minutes); the embedded model is listed in `/v1/models` as soon as the build lands,
without a restart. The check only looks for the package (no import: loading the runtime is left to the
model's first request) and is cached: once found, for good; until then, looked up again at most every
`RECHECK_SECONDS`.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import time
from pathlib import Path

RECHECK_SECONDS = 2.0
BUILD_LOG_NAME = "local-model-build.log"  # in the data dir; written by scripts/serve.sh's background build


class LocalRuntime:
    def __init__(self) -> None:
        self._found = False
        self._checked_at = -math.inf

    def available(self) -> bool:
        if self._found:
            return True
        now = time.monotonic()
        if now - self._checked_at >= RECHECK_SECONDS:
            self._checked_at = now
            self._found = runtime_installed()
        return self._found


def runtime_installed() -> bool:
    importlib.invalidate_caches()  # a package installed since the last look is invisible without this
    try:
        return importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):
        return False


def build_log(data_dir: Path) -> Path | None:
    """The background build's log, when a build was started for this data dir."""
    path = data_dir / BUILD_LOG_NAME
    return path if path.exists() else None


# One per process: the fact is the process's own (what its interpreter can import).
LOCAL_RUNTIME = LocalRuntime()
