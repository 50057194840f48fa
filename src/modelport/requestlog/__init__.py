"""The text gateway's request log: rows (`record`), payload retention, the batched writer, `GET /v1/logs`."""
