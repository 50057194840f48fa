"""The media host's feature routers, in one list so the app factory stays small.

Each entry is `(router, install)`: `install(runtime)` registers start-up/shut-down hooks (sweepers,
workers) or is None.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from fastapi import APIRouter

from modelport.runtime import Runtime

Install = Callable[[Runtime], None]
OPTIONAL_FEATURES = ["modelport.media.files.routes"]


def routers() -> list[tuple[APIRouter, Install | None]]:
    found: list[tuple[APIRouter, Install | None]] = []
    for module_name in OPTIONAL_FEATURES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            continue
        found.append((module.router, getattr(module, "install", None)))
    return found
