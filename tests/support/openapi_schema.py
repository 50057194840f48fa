"""Validate JSON instances against component schemas of the OpenAPI documents in shared/conformance.

Both specs use the OpenAPI 3.0 keyword ``nullable: true`` (even the 3.1 OpenAI document does), which
JSON Schema does not know; it is rewritten to an explicit ``null`` alternative before validation. Other
OpenAPI-only keywords (``discriminator``, ``example``, ``x-*``) are annotations that validators ignore.
``$ref``s of the form ``#/components/schemas/X`` resolve against the whole document.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

from tests.support.cassettes import load_yaml
from tests.support.conformance_data import CONFORMANCE_DIR

OPENAI_SPEC = CONFORMANCE_DIR / "openai-openapi.yaml"
ANTHROPIC_SPEC = CONFORMANCE_DIR / "anthropic-openapi-curated.yaml"


def _rewrite_nullable(node: Any) -> Any:
    """A copy of `node` where ``nullable: true`` becomes a JSON-Schema null alternative."""
    if isinstance(node, list):
        return [_rewrite_nullable(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _rewrite_nullable(v) for k, v in node.items()}
    if out.pop("nullable", False) is not True:
        return out
    if isinstance(out.get("type"), str) and not any(k in out for k in ("allOf", "anyOf", "oneOf", "$ref")):
        out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    return {"anyOf": [out, {"type": "null"}]}


@lru_cache(maxsize=4)
def load_spec(path: Path = OPENAI_SPEC) -> dict[str, Any]:
    """The spec with every schema made JSON-Schema clean (cached: the OpenAI file is 3 MB)."""
    doc = load_yaml(path)
    return {"components": {"schemas": _rewrite_nullable(doc["components"]["schemas"])}}


@lru_cache(maxsize=256)
def validator(schema_name: str, path: Path = OPENAI_SPEC) -> jsonschema.protocols.Validator:
    spec = load_spec(path)
    if schema_name not in spec["components"]["schemas"]:
        raise KeyError(f"{schema_name} is not a component schema of {path.name}")
    root = {**spec, "$ref": f"#/components/schemas/{schema_name}"}
    cls = jsonschema.validators.validator_for({"$schema": "https://json-schema.org/draft/2020-12/schema"})
    return cls(root)


def schema_errors(instance: Any, schema_name: str, path: Path = OPENAI_SPEC) -> list[str]:
    """Human-readable validation errors (empty when valid)."""
    errors = sorted(validator(schema_name, path).iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errors]


def assert_valid(instance: Any, schema_name: str, path: Path = OPENAI_SPEC) -> None:
    """Fail with every error listed when `instance` does not match the component schema."""
    errors = schema_errors(instance, schema_name, path)
    assert not errors, f"{schema_name} violations:\n" + "\n".join(errors[:20])
