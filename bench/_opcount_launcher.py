"""`python bench/_opcount_launcher.py serve ...`: `_guard_launcher.py` (writers flush by count, periodic reads once
at start) with Python opcodes counted per function in the event loop's thread between SIGUSR1 (start) and
SIGUSR2 (stop, write the counts as JSON to $MODELPORT_OPCOUNT_OUT). For `opcount_profile.py`.

`sys.settrace` with `f_trace_opcodes` sees every Python frame the event loop runs, each coroutine resumed
included; it slows the process down a hundredfold while on, which is why it is on only for the counted
batch. Other threads (the SQLite writer's) are not traced.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

Key = tuple[str, int, str]
opcodes: Counter[Key] = Counter()
calls: Counter[Key] = Counter()


def _key(frame: FrameType) -> Key:
    code = frame.f_code
    if code.co_filename == "<string>":  # a dataclass's generated __init__: named after its class
        owner = frame.f_locals.get("self")
        return (f"<dataclass {type(owner).__name__}>", 0, code.co_name)
    return (code.co_filename, code.co_firstlineno, code.co_name)


def _tracer(frame: FrameType, event: str, _arg: Any) -> Any:
    if event != "call":
        return None
    key = _key(frame)
    calls[key] += 1
    frame.f_trace_opcodes = True

    def count(_frame: FrameType, event: str, _arg: Any) -> Any:
        if event == "opcode":
            opcodes[key] += 1
        return count

    return count


def _start(_signum: int, _frame: object) -> None:
    opcodes.clear()
    calls.clear()
    sys.settrace(_tracer)


def _stop(_signum: int, _frame: object) -> None:
    sys.settrace(None)
    rows = [[*key, opcodes[key], calls[key]] for key in opcodes]
    Path(os.environ["MODELPORT_OPCOUNT_OUT"]).write_text(json.dumps(rows))


signal.signal(signal.SIGUSR1, _start)
signal.signal(signal.SIGUSR2, _stop)
sys.argv = [str(Path(__file__).with_name("_guard_launcher.py")), *sys.argv[1:]]
runpy.run_path(sys.argv[0], run_name="__main__")
