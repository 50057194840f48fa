"""The request log writer: a `BatchWriter` of log rows, inserted idempotently by request id."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.requestlog.record import LogRecord
from modelport.requestlog.store import insert_logs
from modelport.services import ServiceKey
from modelport.storage.batch_writer import BatchWriter, WriterStats

REQUEST_LOG: ServiceKey[RequestLogWriter] = ServiceKey("request log")

__all__ = ["REQUEST_LOG", "RequestLogWriter", "WriterStats"]


class RequestLogWriter(BatchWriter[LogRecord]):
    def __init__(
        self,
        engine: AsyncEngine,
        *,
        max_batch: int = 500,
        flush_interval: float = 0.2,
        max_pending: int = 50_000,
        spill_dir: Path | None = None,
        close_timeout: float = 10.0,
        retry_initial: float = 0.1,
        retry_max: float = 5.0,
    ) -> None:
        super().__init__(
            engine,
            lambda batch: insert_logs(engine, batch),
            name="request log",
            to_row=LogRecord.as_row,
            from_row=LogRecord.from_row,
            max_batch=max_batch,
            flush_interval=flush_interval,
            max_pending=max_pending,
            spill_dir=spill_dir,
            close_timeout=close_timeout,
            retry_initial=retry_initial,
            retry_max=retry_max,
        )

    def record(self, rec: LogRecord) -> None:
        """Queue one row; never waits."""
        self.submit(rec)
