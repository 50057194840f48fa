"""Whether a `MODELPORT_*` environment name is a setting the code reads (deployment files are checked with it)."""

from __future__ import annotations

from pydantic import BaseModel

from modelport.settings import Settings


def is_setting(name: str) -> bool:
    """`MODELPORT_FILES__S3_BUCKET` → settings.files.s3_bucket must be a field."""
    model: type[BaseModel] = Settings
    parts = name.removeprefix("MODELPORT_").lower().split("__")
    for i, part in enumerate(parts):
        field = model.model_fields.get(part)
        if field is None:
            return False
        if i < len(parts) - 1:
            nested = field.annotation
            if not (isinstance(nested, type) and issubclass(nested, BaseModel)):
                return False
            model = nested
    return True
