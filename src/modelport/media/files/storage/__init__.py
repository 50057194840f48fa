"""Byte storage for media files: one small interface, a local-directory and an S3-compatible file store."""

from modelport.media.files.storage.base import FileStore, ObjectMissing, check_key
from modelport.media.files.storage.factory import build_store

__all__ = ["FileStore", "ObjectMissing", "build_store", "check_key"]
