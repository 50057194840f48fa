"""The request log writer: a `BatchWriter` of log rows, inserted idempotently by request id."""

from __future__ import annotations

from typing import Unpack

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.requestlog.record import LogRecord
from modelport.requestlog.store import insert_logs
from modelport.services import ServiceKey
from modelport.storage.batch_writer import BatchWriter, BoundedTuning, WriterStats

REQUEST_LOG: ServiceKey[RequestLogWriter] = ServiceKey("request log")

__all__ = ["REQUEST_LOG", "RequestLogWriter", "WriterStats"]


class RequestLogWriter(BatchWriter[LogRecord]):
    def __init__(self, engine: AsyncEngine, **tuning: Unpack[BoundedTuning]) -> None:
        super().__init__(
            engine, insert_logs, name="request log", to_row=LogRecord.as_row, from_row=LogRecord.from_row, **tuning
        )

    def record(self, rec: LogRecord) -> None:
        """Queue one row; never waits."""
        self.submit(rec)
