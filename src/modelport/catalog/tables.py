"""The catalog's models as imported from the file or edited through the admin API.

Declared on the shared metadata (`storage/schema.py`); the table owner map in
`tests/unit/architecture/test_table_owners.py` says who else may write them. Alembic migrations under
`storage/migrations/versions/` must match.
"""

from __future__ import annotations

from sqlalchemy import JSON, BigInteger, Boolean, Column, String, Table

from modelport.storage.schema import metadata

catalog_models = Table(
    "catalog_models",
    metadata,
    # `<provider>/<name>` for text models, `<provider>/<model_id>` for media models.
    Column("slug", String(200), primary_key=True),
    Column("kind", String(8), nullable=False),  # text | media
    # The full entry (prices, deployments, media type, docs) as validated JSON.
    Column("spec", JSON, nullable=False),
    Column("active", Boolean, nullable=False, default=True),
    # file: imported from the catalog file (re-imported at start-up); admin: edited through the admin API
    # (a later file import leaves it alone).
    Column("managed_by", String(8), nullable=False),
    Column("updated_at_ms", BigInteger, nullable=False),
)
