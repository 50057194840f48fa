"""The queue engine's adapter (PgQueuer): enqueue a task id idempotently, consume with bounded concurrency.

The task rows in our database are the source of truth; the queue only says "look at task X now". On
PostgreSQL the queue lives in PgQueuer's tables (shared by every process and machine, LISTEN/NOTIFY wake-ups,
heartbeats that make a killed worker's job claimable again); on SQLite each process has PgQueuer's in-memory
queue, and the reconciler refills it from the task rows after a restart.
"""

from modelport.queue.engine import Handler, JobKind, Jobs, TaskQueue, build_queue
from modelport.queue.schema import ensure_queue_schema, queue_schema_installed

__all__ = ["Handler", "JobKind", "Jobs", "TaskQueue", "build_queue", "ensure_queue_schema", "queue_schema_installed"]
