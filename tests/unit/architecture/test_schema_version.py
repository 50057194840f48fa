"""`storage.schema_version`'s constants are what Alembic computes from the migration scripts.

Serving processes check the schema with those constants (no Alembic import): a new migration that does not
update them would leave every start migrating and `/readyz` reporting `behind`; this fails first.
"""

from __future__ import annotations

from alembic.script import ScriptDirectory

from modelport.storage.migrate import alembic_config
from modelport.storage.schema_version import HEAD_REVISION, KNOWN_REVISIONS, state_of


def test_constants_match_the_migration_scripts() -> None:
    scripts = ScriptDirectory.from_config(alembic_config())
    assert scripts.get_current_head() == HEAD_REVISION
    assert {rev.revision for rev in scripts.walk_revisions()} == KNOWN_REVISIONS


def test_state_of_applied_revisions() -> None:
    assert state_of({HEAD_REVISION}) == "current"
    assert state_of(set()) == "behind"
    assert state_of({min(KNOWN_REVISIONS)}) == "behind"
    assert state_of({"9999_from_a_newer_version"}) == "ahead"
