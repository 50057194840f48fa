"""Settings of the media file store (nested as `settings.files`, env prefix `MODELPORT_FILES__`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class FilesSettings(BaseModel):
    backend: Literal["local", "s3"] = "local"
    # Upload limit in bytes; 16 MB as the spec's default.
    max_upload_bytes: int = Field(default=16 * 1024 * 1024, gt=0)
    retention_seconds: int = Field(default=7 * 24 * 3600, gt=0)
    quota_bytes: int = Field(default=1024 * 1024 * 1024, gt=0)
    quota_files: int = Field(default=1000, gt=0)
    sweep_interval_seconds: float = Field(default=300.0, gt=0)
    # S3-compatible object storage (backend = "s3").
    s3_bucket: str = "modelport-media"
    s3_endpoint_url: str | None = None
    s3_region: str = "us-east-1"
    s3_access_key_id: str | None = None
    s3_secret_access_key: str | None = None
    s3_prefix: str = "files/"
