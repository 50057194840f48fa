"""Identifiers: `new_id` from the OS's random source, `unique_id` from a per-process seeded generator."""

from __future__ import annotations

import os
import re

from modelport.ids import new_id, unique_id


def test_unique_ids_have_the_shape_of_new_ids_and_do_not_repeat() -> None:
    pattern = re.compile(r"^req_[0-9a-f]{24}$")
    ids = [unique_id("req") for _ in range(20_000)]
    assert all(pattern.match(i) for i in ids)
    assert len(set(ids)) == len(ids)
    assert re.match(r"^stl_[0-9a-f]{8}$", unique_id("stl", 4))
    assert pattern.match(new_id("req"))


def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    """Serving processes are forked from the CLI: each must draw its own ids, not its parent's sequence."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        try:
            os.write(write, " ".join(unique_id("req") for _ in range(3)).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        child = set(pipe.read().split())
    parent = {unique_id("req") for _ in range(3)}
    assert len(child) == 3 and not child & parent
