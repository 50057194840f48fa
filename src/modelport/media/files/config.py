"""Settings of the media file store (nested as `settings.files`, env prefix `MODELPORT_FILES__`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr


class FilesSettings(BaseModel):
    backend: Literal["local", "s3"] = "local"
    # Local backend root; default `<data_dir>/media`.
    local_dir: Path | None = None
    # Upload limit in bytes; 16 MB as the spec's default.
    max_upload_bytes: int = Field(default=16 * 1024 * 1024, gt=0)
    retention_seconds: int = Field(default=7 * 24 * 3600, gt=0)
    # Per-team quota over the team's non-expired files.
    quota_bytes: int = Field(default=1024 * 1024 * 1024, gt=0)
    quota_files: int = Field(default=1000, gt=0)
    sweep_interval_seconds: float = Field(default=300.0, gt=0)
    # Rows removed per sweeper statement; keeps each transaction short.
    sweep_batch: int = Field(default=200, gt=0, le=10_000)
    # S3-compatible object storage (backend = "s3").
    s3_bucket: str = "modelport-media"
    s3_endpoint_url: str | None = None
    s3_region: str = "us-east-1"
    s3_access_key_id: str | None = None
    s3_secret_access_key: SecretStr | None = None
    s3_prefix: str = "files/"
    # "path" for most self-hosted servers (MinIO, Ceph); "auto" lets botocore choose.
    s3_addressing_style: Literal["auto", "path", "virtual"] = "auto"
    # Multipart part size: the most upload bytes one request holds in memory (S3 minimum 5 MiB).
    s3_part_size: int = Field(default=8 * 1024 * 1024, ge=5 * 1024 * 1024)
