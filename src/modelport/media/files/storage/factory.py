"""Builds the configured file store (setting `files.backend`: local or s3)."""

from __future__ import annotations

from pathlib import Path

from modelport.media.files.storage.base import FileStore
from modelport.media.files.storage.local import LocalFileStore
from modelport.settings import FilesSettings


def build_store(settings: FilesSettings, data_dir: Path) -> FileStore:
    if settings.backend == "s3":
        # aiobotocore and botocore (~25 MB resident) only in processes configured for S3.
        from modelport.media.files.storage.s3 import S3FileStore

        secret = settings.s3_secret_access_key
        return S3FileStore(
            bucket=settings.s3_bucket,
            prefix=settings.s3_prefix,
            endpoint_url=settings.s3_endpoint_url,
            region=settings.s3_region,
            access_key_id=settings.s3_access_key_id,
            secret_access_key=secret.get_secret_value() if secret is not None else None,
            addressing_style=settings.s3_addressing_style,
            part_size=settings.s3_part_size,
        )
    return LocalFileStore(settings.local_dir or data_dir / "media")
