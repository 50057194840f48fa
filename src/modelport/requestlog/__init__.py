"""The text gateway's request log: rows (`record`), payload keeping (`payloads`), the batched writer, `GET /v1/logs`."""
