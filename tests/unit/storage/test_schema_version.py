"""`storage.schema_version`'s constants are what Alembic computes from the migration scripts.

Serving processes check the schema with those constants (no Alembic import): a new migration that does not
update them would leave every start migrating and `/readyz` reporting `behind`; this fails first.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from alembic.script import ScriptDirectory

from modelport.storage.migrate import alembic_config
from modelport.storage.schema_version import HEAD_REVISION, KNOWN_REVISIONS, sqlite_state, state_of


def test_constants_match_the_migration_scripts() -> None:
    scripts = ScriptDirectory.from_config(alembic_config())
    assert scripts.get_current_head() == HEAD_REVISION
    assert {rev.revision for rev in scripts.walk_revisions()} == KNOWN_REVISIONS


def test_state_of_applied_revisions() -> None:
    assert state_of({HEAD_REVISION}) == "current"
    assert state_of(set()) == "behind"
    assert state_of({min(KNOWN_REVISIONS)}) == "behind"
    assert state_of({"9999_from_a_newer_version"}) == "ahead"


def test_sqlite_state_reads_the_file(tmp_path: Path) -> None:
    path = tmp_path / "modelport.db"
    assert sqlite_state(path) == "behind"  # no file yet (and none is created)
    assert not path.exists()
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE other (x)")
    db.commit()
    assert sqlite_state(path) == "behind"  # never migrated
    db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
    db.execute("INSERT INTO alembic_version VALUES (?)", (HEAD_REVISION,))
    db.commit()
    assert sqlite_state(path) == "current"
    db.execute("UPDATE alembic_version SET version_num = '9999'")
    db.commit()
    db.close()
    assert sqlite_state(path) == "ahead"
