"""The HTML of the reference pages: one layout, the index, a Swagger UI page per host, a guide page."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from modelport.media.reference.guides import INDEX, Guide

STATIC = "/docs/static"
HOSTS = {
    "media": ("Media host API", "/openapi.json", "files, assets, tasks, webhooks, balance and the admin API"),
    "text": ("Text gateway API", "/docs/openapi/text.json", "Chat Completions, Responses, Messages, models, logs"),
}


def _current(flag: bool) -> str:
    return ' aria-current="page"' if flag else ""


def _nav(current: str) -> str:
    items = [("/docs", "Reference"), ("/docs/api/media", "Media API"), ("/docs/api/text", "Text API")]
    items += [("/docs/guides/", "Guides"), ("/console/", "Console")]
    links = "".join(
        f'<li><a href="{href}"{_current(href == current)}>{escape(label)}</a></li>' for href, label in items
    )
    return f'<nav aria-label="Reference"><ul>{links}</ul></nav>'


def layout(title: str, current: str, body: str, *, head: str = "", wide: bool = False) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · modelport</title>"
        f'<link rel="stylesheet" href="{STATIC}/reference/reference.css">{head}</head><body>'
        '<a class="skip" href="#content">Skip to content</a>'
        f'<header class="top"><a class="brand" href="/docs">modelport</a>{_nav(current)}</header>'
        f'<div class="layout{" wide" if wide else ""}">{body}</div></body></html>'
    )


def index_page(guides: Iterable[Guide], models: Iterable[tuple[str, str]]) -> str:
    cards = "".join(
        f'<li><h3><a href="/docs/api/{host}">{escape(name)}</a></h3><p>{escape(about)}. '
        f'OpenAPI document: <a href="{url}"><code>{escape(url)}</code></a></p></li>'
        for host, (name, url, about) in HOSTS.items()
    )
    guide_items = "".join(
        f'<li><a href="/docs/guides/{"" if g.name == INDEX else g.name}">{escape(g.title)}</a></li>' for g in guides
    )
    model_items = "".join(
        f'<li><a href="/docs/models/{escape(slug)}"><code>{escape(slug)}</code></a> {escape(about)}</li>'
        for slug, about in models
    )
    body = (
        '<main id="content" class="prose" style="grid-column: 1 / -1">'
        "<h1>API reference</h1>"
        '<p class="muted">Two hosts, one key: the media host serves files, assets and tasks; the text gateway '
        "speaks the OpenAI and Anthropic protocols. Each host documents itself in OpenAPI.</p>"
        f'<h2>Interactive reference</h2><ul class="cards">{cards}</ul>'
        f"<h2>Guides</h2><ul>{guide_items}</ul>"
        + (f"<h2>Media models</h2><ul>{model_items}</ul>" if model_items else "")
        + "</main>"
    )
    return layout("API reference", "/docs", body)


def swagger_page(host: str) -> str:
    name, url, about = HOSTS[host]
    head = f'<link rel="stylesheet" href="{STATIC}/swagger-ui/swagger-ui.css">'
    body = (
        f'<main id="content"><h1 style="margin:1rem 1.25rem 0">{escape(name)}</h1>'
        f'<p class="muted" style="margin:.25rem 1.25rem">{escape(about)}.</p>'
        f'<div id="swagger-ui" data-openapi-url="{escape(url)}"></div>'
        f'<noscript><p style="margin:1.25rem">This page needs JavaScript; the document itself is at '
        f'<a href="{escape(url)}">{escape(url)}</a>.</p></noscript></main>'
        f'<script src="{STATIC}/swagger-ui/swagger-ui-bundle.js"></script>'
        f'<script src="{STATIC}/reference/swagger-init.js"></script>'
    )
    return layout(name, f"/docs/api/{host}", body, head=head, wide=True)


def guide_page(current: Guide, guides: Iterable[Guide]) -> str:
    links = "".join(
        f'<li><a href="/docs/guides/{"" if g.name == INDEX else g.name}"'
        f"{_current(g.name == current.name)}>{escape(g.title)}</a></li>"
        for g in guides
    )
    body = (
        f'<aside><h2 id="guides-nav">Guides</h2><nav aria-labelledby="guides-nav"><ul>{links}</ul></nav></aside>'
        f'<main id="content" class="prose">{current.html}</main>'
    )
    return layout(current.title, "/docs/guides/", body)
