"""The Alembic history has exactly one head, and revision ids follow the file numbers.

Two branches that each add "the next" migration both land cleanly in git (different file names) and
leave two heads, which `modelport migrate` refuses; this catches it before a release does.
"""

from __future__ import annotations

from pathlib import Path

from alembic.script import ScriptDirectory

from modelport.storage.migrate import alembic_config


def test_one_head_and_numbered_files() -> None:
    scripts = ScriptDirectory.from_config(alembic_config())
    assert len(scripts.get_heads()) == 1, f"several migration heads: {scripts.get_heads()}"
    for revision in scripts.walk_revisions():
        assert revision.path is not None
        assert Path(revision.path).name.startswith(f"{revision.revision}_"), revision.path
