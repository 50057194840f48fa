"""What `modelport serve` holds in memory after start (issue 16): heavy libraries load on first use, and the
supervisor of `--workers N` is a lean process.

A serving process must not import PyAV, Pillow, Alembic, markdown-it, jsonschema, numpy, redis-py or the
model runtimes at start: they load with the first media task or guide page, or only in the forked child
that migrates a fresh SQLite file. The
supervisor (`modelport.process.supervisor`, exec'd by the CLI after start-up) holds the standard library only, plus
prometheus-client when `/metrics` is on: no pydantic, no SQLAlchemy.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx

from tests.support.server import run_server, worker_pids

# Loaded on first use only; a serving process that has answered API calls still has none of them.
LAZY = (
    *("av", "PIL", "pillow_heif", "alembic", "mako", "markdown_it", "jsonschema", "numpy", "onnxruntime", "llama_cpp"),
    "redis",  # only with MODELPORT_REDIS_URL
    "asyncpg",  # only with PostgreSQL (the in-memory task queue of SQLite needs no driver)
)
# The CLI, then `modelport serve` with an exit hook that writes the process's modules to a file.
_DUMP_MODULES = """
import atexit, json, runpy, sys
path = sys.argv.pop(1)
atexit.register(lambda: open(path, "w").write(json.dumps(sorted(sys.modules))))
sys.argv[0] = "modelport"
runpy.run_module("modelport", run_name="__main__", alter_sys=True)
"""


def _shared_objects(pid: int) -> set[str]:
    return {line.split()[-1] for line in Path(f"/proc/{pid}/maps").read_text().splitlines() if ".so" in line}


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_a_serving_process_loads_heavy_libraries_only_on_first_use(tmp_path: Path) -> None:
    # A first start: the SQLite file is created and migrated in a forked child, so Alembic stays out.
    dump = tmp_path / "modules.json"
    with run_server(tmp_path, python_args=("-c", _DUMP_MODULES, str(dump)), fresh_database=True) as server:
        assert server.demo_key is not None
        auth = {"Authorization": f"Bearer {server.demo_key}"}
        assert httpx.get(server.text_url + "/v1/models", headers=auth).status_code == 200
        assert httpx.get(server.media_url + "/api/v1/models", headers=auth).status_code == 200
        assert httpx.get(server.text_url + "/readyz").status_code == 200
        assert server.stop() == 0
    modules = set(json.loads(dump.read_text()))
    assert "modelport.apps.assemble" in modules  # the hook saw a process that served
    loaded = sorted(name for name in modules if name.partition(".")[0] in LAZY)
    assert not loaded, f"imported at start: {loaded}"


def test_the_supervisor_of_several_workers_holds_no_pydantic_or_sqlalchemy(tmp_path: Path) -> None:
    with run_server(tmp_path, "--workers", "2", MODELPORT_METRICS_PORT="0") as server:
        supervisor = server.process.pid
        cmdline = Path(f"/proc/{supervisor}/cmdline").read_bytes().split(b"\0")
        assert b"modelport.process.supervisor" in cmdline  # the CLI exec'd it: same PID
        objects = _shared_objects(supervisor)
        assert not [o for o in objects if "pydantic_core" in o or "sqlalchemy" in o or "uvloop" in o], objects
        assert _rss_mib(supervisor) < 60
        workers = worker_pids(supervisor)
        assert len(workers) == 2
        for pid in workers:
            heavy = [o for o in _shared_objects(pid) if "/av/" in o or "/PIL/" in o or "libav" in o]
            assert not heavy, heavy
        metrics = next(line for line in server.banner if line.startswith("metrics:")).split()[1]
        assert httpx.get(metrics, timeout=10).status_code == 200
        assert server.stop(signal.SIGTERM) == 0
