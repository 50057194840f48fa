"""The schema's shared metadata, on which each feature declares its own tables (`<feature>/tables.py`):
one definition for SQLite and PostgreSQL.

Conventions: ids are short prefixed strings; times are integer UNIX milliseconds (`*_ms`), which sort,
compare and index the same on both databases; money is integer micro-USD (`*_micros`, 1 USD = 1,000,000).
Alembic migrations under `migrations/versions/` must match the tables.

Storage sits below every feature, so it names their tables modules instead of importing them (as Django
lists its installed apps): `all_tables()` imports each and returns the metadata with every table, for
Alembic and for anything that resolves foreign keys across features. A feature that adds a tables module
adds its row to `TABLE_MODULES` (`tests/unit/architecture/test_table_owners.py` checks it).
"""

from __future__ import annotations

import importlib

from sqlalchemy import MetaData

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# Every feature's tables module, in dependency order (a foreign key's table before the tables that refer to it).
TABLE_MODULES = (
    "modelport.accounts.tables",
    "modelport.billing.tables",
    "modelport.catalog.tables",
    "modelport.requestlog.tables",
    "modelport.media.files.tables",
    "modelport.media.assets.tables",
    "modelport.media.tasks.tables",
    "modelport.media.tables",
    "modelport.webhooks.tables",
    "modelport.retention.tables",
    "modelport.alerts.tables",
    "modelport.responses_store.tables",
    "modelport.response_cache.tables",
)


def all_tables() -> MetaData:
    """The shared metadata with every feature's tables declared on it."""
    for name in TABLE_MODULES:
        importlib.import_module(name)
    return metadata
