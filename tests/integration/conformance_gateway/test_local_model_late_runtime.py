"""First start on a fresh machine: `serve` answers before llama-cpp-python is built, and lists the embedded
model as soon as the runtime lands, without a restart.

`scripts/serve.sh` builds llama-cpp-python in the background while both hosts serve. Here the server runs
with an interpreter that cannot import `llama_cpp` (a `sitecustomize` on PYTHONPATH refuses it while a
flag file is missing: the environment is changed, not our code) until the test creates the flag, as the
end of a build would install it.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from tests.support.server import RunningServer, run_server

pytestmark = pytest.mark.local_model

MODEL = "local/smollm2-135m-instruct"

BLOCKER = '''
import os
import sys

_FLAG = os.environ["MODELPORT_TEST_LLAMA_FLAG"]


class _NotBuiltYet:
    """Refuses llama_cpp while the flag file is missing, like an interpreter it is not installed in."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if (name == "llama_cpp" or name.startswith("llama_cpp.")) and not os.path.exists(_FLAG):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NotBuiltYet)
'''


def _listed(server: RunningServer) -> list[str]:
    r = httpx.get(server.text_url + "/v1/models", headers={"authorization": f"Bearer {server.demo_key}"}, timeout=30)
    assert r.status_code == 200, r.text
    return [m["id"] for m in r.json()["data"]]


def _chat(server: RunningServer) -> httpx.Response:
    return httpx.post(
        server.text_url + "/v1/chat/completions",
        headers={"authorization": f"Bearer {server.demo_key}"},
        json={"model": MODEL, "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4},
        timeout=120,
    )


def test_hosts_answer_before_the_runtime_and_list_the_model_once_it_lands(tmp_path: Path) -> None:
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(BLOCKER)
    flag = tmp_path / "llama-cpp-built"
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    build_log = data_dir / "local-model-build.log"  # what scripts/serve.sh's background build writes
    build_log.write_text("building llama-cpp-python ...\n")
    env = {"PYTHONPATH": str(shim), "MODELPORT_TEST_LLAMA_FLAG": str(flag)}
    with run_server(data_dir, env=env, MODELPORT_DEMO_BALANCE_USD="100") as server:
        banner = "\n".join(server.banner)
        assert "building in the background" in banner and str(build_log) in banner, banner

        # Both hosts answer; the model is absent from the list and its requests get a clear 503.
        assert httpx.get(server.media_url + "/healthz", timeout=30).status_code == 200
        assert MODEL not in _listed(server)
        not_yet = httpx.get(
            server.text_url + "/v1/models/" + MODEL,
            headers={"authorization": f"Bearer {server.demo_key}"},
            timeout=30,
        )
        assert not_yet.status_code == 404
        refused = _chat(server)
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["message"]

        flag.touch()  # the build finished: llama_cpp is importable from now on
        deadline = time.monotonic() + 60
        while MODEL not in _listed(server):
            assert time.monotonic() < deadline, "the model was not listed after the runtime appeared"
            time.sleep(0.2)
        answered = _chat(server)
        assert answered.status_code == 200, answered.text
        assert answered.json()["usage"]["completion_tokens"] > 0


def test_banner_says_ready_when_the_runtime_is_installed(tmp_path: Path) -> None:
    with run_server(tmp_path) as server:
        assert any(line.startswith("embedded text model: ready") for line in server.banner), server.banner
