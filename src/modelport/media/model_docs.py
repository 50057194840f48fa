"""The page each media model's `docs_url` points at: what it does, its input as a table, its price, and
example `curl` commands that create a task and poll it. Built from the catalog entry, so it never drifts."""

from __future__ import annotations

import html
import json
from typing import Any

from modelport.catalog_spec import MediaModel

_UNITS = {"image": "image", "second": "second of video", "task": "task", "1k_characters": "1,000 characters of text"}


def _example(model: MediaModel) -> dict[str, Any]:
    props: dict[str, Any] = (model.input_schema or {}).get("properties", {})
    body: dict[str, Any] = {}
    for name in ("prompt", "image_url", "video_url", "text"):
        if name in props:
            body[name] = (
                "a lighthouse at dusk" if name in ("prompt", "text") else f"https://example.com/input.{name[:5]}"
            )
            break
    for name, value in (("width", 256), ("height", 256), ("duration", 2), ("style", 3)):
        if name in props:
            body[name] = value
    return body


def _rows(model: MediaModel) -> str:
    schema = model.input_schema or {}
    required = set(schema.get("required", []))
    rows = []
    for name, spec in schema.get("properties", {}).items():
        rules = [f"{k} {spec[k]}" for k in ("minimum", "maximum", "minLength", "maxLength", "multipleOf") if k in spec]
        if "enum" in spec:
            rules.append("one of " + ", ".join(str(v) for v in spec["enum"]))
        rows.append(
            "<tr>"
            + "".join(
                f"<td>{html.escape(str(cell))}</td>"
                for cell in (
                    name,
                    spec.get("type", "any"),
                    "yes" if name in required else "no",
                    "; ".join(rules),
                    spec.get("description", ""),
                )
            )
            + "</tr>"
        )
    return "".join(rows)


def render_page(model: MediaModel, public_base: str) -> str:
    base = public_base.rstrip("/")
    create = (
        f"curl -s {base}/{model.slug} \\\n  -H 'Authorization: Bearer $MODELPORT_KEY' "
        f"-H 'Content-Type: application/json' \\\n  -d '{json.dumps(_example(model))}'"
    )
    poll = f"curl -s {base}/api/v1/tasks/$TASK_ID \\\n  -H 'Authorization: Bearer $MODELPORT_KEY'"
    unit = _UNITS.get(model.price_unit, model.price_unit)
    e = html.escape
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{e(model.slug)}</title></head><body>"
        f"<h1>{e(model.slug)}</h1><p>Type: {e(model.type)}</p><p>{e(model.description)}</p>"
        f"<h2>Price</h2><p>{e(str(model.price_usd))} USD per {e(unit)}; the price is frozen when the task is"
        " created and refunded if it fails.</p>"
        "<h2>Input</h2><table><tr><th>Field</th><th>Type</th><th>Required</th><th>Rules</th><th>Notes</th></tr>"
        f"{_rows(model)}</table>"
        f"<h2>Create a task</h2><pre>{e(create)}</pre>"
        "<p>The answer's <code>data.task_id</code> names the task.</p>"
        f"<h2>Poll it</h2><pre>{e(poll)}</pre>"
        "<p>When <code>data.status</code> is <code>success</code>, <code>data.result.resources</code> lists the"
        " outputs: <code>url</code> (a signed download link), <code>type</code>, <code>width</code>,"
        " <code>height</code>, <code>format</code> and <code>role</code>.</p>"
        f"<p>Deadline: {model.deadline_seconds:g} s.</p></body></html>"
    )
