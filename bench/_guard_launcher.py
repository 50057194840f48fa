"""`python bench/_guard_launcher.py serve ...`: `modelport` with its batch writers flushing by count, not by time.

For `instr_guard.py`: under valgrind a request takes 50x its usual wall time and the machine's load changes
that further, so writers that flush every 0.2 s would write a different number of batches (each with a fixed
cost of its own) per run. Here they flush every `ROWS` rows instead (the same code path: a full batch wakes
the writer), so a counted batch of requests always contains the same writes. The credit reservations' tick
(a database query every 0.1 s while the process holds a reservation, to see whether another process asked for
it back) runs once at start-up and not again: `instr_guard.py` also sets the lease, sweep and idle-return
periods long, so nothing it would do comes due. Likewise the catalog's re-read from the database (every 5 s)
and the key's `last_used_at` write (once a minute) happen once, in the uncounted warm-up. Nothing else changes.
"""

from __future__ import annotations

from modelport.accounts import auth
from modelport.billing import credit
from modelport.catalog import CatalogStore
from modelport.process.cli import main
from modelport.storage.batch_writer import BatchWriter

ROWS = 10
assert hasattr(BatchWriter, "default_flush_interval") and hasattr(BatchWriter, "default_max_batch")
BatchWriter.default_flush_interval = 3600.0  # every writer: the request log's and the settlements'
BatchWriter.default_max_batch = ROWS
assert hasattr(BatchWriter, "default_short_batches_at_once")
BatchWriter.default_short_batches_at_once = False  # only whole batches of ROWS: as many writes every run

catalog_defaults = CatalogStore.__init__.__kwdefaults__
assert catalog_defaults is not None and "refresh_seconds" in catalog_defaults
catalog_defaults["refresh_seconds"] = 3600.0
assert hasattr(credit, "TICK_SECONDS") and hasattr(auth, "_TOUCH_INTERVAL_MS")
credit.TICK_SECONDS = 3600.0
auth._TOUCH_INTERVAL_MS = 3_600_000
main()
