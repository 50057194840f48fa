"""Models and prices: the catalog as stored, and edits through the same service as `PUT /admin/v1/models`.

An entry is edited as its JSON spec (the admin API's body). Deployment header values and a base URL's
userinfo and query can carry credentials, so the editor never shows them: they are replaced by `MASK`,
and a value left masked on save keeps what the same deployment (by name, else by position) had.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.permissions import OPERATOR_REFUSAL
from modelport.catalog_spec import MediaModel, TextModel
from modelport.console.deps import require_operator
from modelport.console.operator.common import MASK, back, flash, form_fields, masked_url, may_change, operator, page
from modelport.errors import Forbidden, InvalidParameters, NotFound, ServiceError

router = APIRouter(prefix="/admin", dependencies=[Depends(require_operator)])

_NEW_TEXT: dict[str, Any] = {
    "display_name": "",
    "prices": {"input": "0", "output": "0"},
    "deployments": [{"kind": "openai_compatible", "base_url": "https://example.invalid/v1", "model": "name"}],
}


def _masked(spec: dict[str, Any]) -> dict[str, Any]:
    shown: dict[str, Any] = json.loads(json.dumps(spec))
    for deployment in shown.get("deployments") or []:
        if not isinstance(deployment, dict):
            continue
        if isinstance(deployment.get("headers"), dict):
            deployment["headers"] = {name: MASK for name in deployment["headers"]}
        if isinstance(deployment.get("base_url"), str):
            deployment["base_url"] = masked_url(deployment["base_url"])
    return shown


def _unmask(spec: dict[str, Any], stored: TextModel | MediaModel | None) -> dict[str, Any]:
    if not isinstance(stored, TextModel):
        return spec
    by_name = {d.name: d for d in stored.deployments if d.name}
    for i, deployment in enumerate(spec.get("deployments") or []):
        if not isinstance(deployment, dict):
            continue
        before = by_name.get(deployment.get("name") or "") or (
            stored.deployments[i] if i < len(stored.deployments) else None
        )
        url = deployment.get("base_url")
        if isinstance(url, str) and MASK in url:
            if before is None or masked_url(before.base_url) != url:
                raise InvalidParameters(f"the base URL of deployment {i + 1} is masked: type the whole URL again")
            deployment["base_url"] = before.base_url
        if not isinstance(deployment.get("headers"), dict):
            continue
        for name, value in deployment["headers"].items():
            if value == MASK:
                if before is None or name not in before.headers:
                    raise InvalidParameters(f"header {name!r} of deployment {i + 1} has no stored value to keep")
                deployment["headers"][name] = before.headers[name]
    return spec


async def _find(request: Request, slug: str) -> TextModel | MediaModel | None:
    snapshot = await operator(request).models()
    text = snapshot.text.get(slug)
    return text if text is not None else snapshot.media.get(slug)


@router.get("/models")
async def models_page(request: Request) -> Response:
    snapshot = await operator(request).models()
    context = {
        "title": "Models and prices",
        "active": "models",
        "text_models": sorted(snapshot.text.values(), key=lambda m: m.id),
        "media_models": list(snapshot.media.values()),
    }
    return page(request, "operator/models.html", context)


@router.get("/models/edit")
async def edit_page(request: Request) -> Response:
    slug = request.query_params.get("slug", "")
    kind = request.query_params.get("kind", "text")
    if not slug and not may_change(request):
        raise Forbidden(OPERATOR_REFUSAL)  # adding a model is only a form: nothing here to read
    entry = await _find(request, slug) if slug else None
    if slug and entry is None:
        raise NotFound(f"no model {slug!r}")
    if entry is not None:
        kind = "text" if isinstance(entry, TextModel) else "media"
        spec = _masked(entry.model_dump(mode="json", exclude={"id", "slug"}))
    else:
        spec = (
            _NEW_TEXT
            if kind == "text"
            else {"type": "text-to-image", "description": "", "docs_url": "", "price_usd": "0", "active": False}
        )
    context = {
        "title": (f"Edit {slug}" if may_change(request) else f"Model {slug}") if slug else "Add a model",
        "active": "models",
        "slug": slug,
        "kind": kind,
        "spec": json.dumps(spec, indent=2, ensure_ascii=False),
        "mask": MASK,
        "error": None,
    }
    return page(request, "operator/model_edit.html", context)


@router.post("/models")
async def save_model(request: Request) -> Response:
    fields = await form_fields(request)
    slug, kind, raw = fields.get("slug", ""), fields.get("kind", ""), fields.get("spec", "")
    try:
        spec = json.loads(raw)
        if not isinstance(spec, dict):
            raise InvalidParameters("the spec must be a JSON object")
        if kind not in ("text", "media"):
            raise InvalidParameters("kind must be text or media")
        spec = _unmask(spec, await _find(request, slug))
        await operator(request).put_model(kind, slug, spec)
    except (ValueError, ServiceError) as exc:
        message = exc.detail if isinstance(exc, ServiceError) else f"not valid JSON: {exc}"
        context = {
            "title": f"Edit {slug}" if slug else "Add a model",
            "active": "models",
            "slug": slug,
            "kind": kind,
            "spec": raw,
            "mask": MASK,
            "error": message,
        }
        return page(request, "operator/model_edit.html", context, status=400)
    flash(request, f"Saved {slug}; every process uses it within the catalog refresh interval.")
    return back(request, "/admin/models")


@router.post("/models/delete")
async def delete_model(request: Request) -> Response:
    slug = (await form_fields(request)).get("slug", "")
    try:
        await operator(request).delete_model(slug)
    except ServiceError as exc:
        flash(request, exc.detail or exc.category, error=True)
    else:
        flash(request, f"Deleted {slug}.")
    return back(request, "/admin/models")
