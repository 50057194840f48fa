"""Alembic environment: runs on the connection that `modelport.storage.migrate` hands over."""

from __future__ import annotations

from alembic import context

from modelport.storage.schema import all_tables

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations with `modelport migrate` (modelport.storage.migrate), not the alembic CLI")

context.configure(
    connection=connection,
    target_metadata=all_tables(),
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
    on_version_apply=context.config.attributes.get("on_version_apply"),  # `migrate`'s progress on a terminal
)
with context.begin_transaction():
    context.run_migrations()
