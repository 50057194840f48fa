"""The guides under docs/api/, rendered to HTML with markdown-it-py.

The package carries them: `guides/` beside this module is a link to the repository's docs/api/, which
setuptools follows when it builds a wheel (so an installed package has its own copy) and which an editable
install reads in place. Rendered once per process, on first use, and kept: they change only with a new release.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_MD_LINK = re.compile(r"^([a-z0-9][a-z0-9-]*)\.md(#[A-Za-z0-9_-]*)?$")
INDEX = "README"


@dataclass(frozen=True, slots=True)
class Guide:
    name: str  # the file name without `.md`; README is the index
    title: str
    html: str


def _folder() -> Traversable:
    return resources.files("modelport.media.reference") / "guides"


def slug(text: str) -> str:
    """The anchor GitHub gives a heading (lowercase, punctuation dropped, spaces to dashes), so links match."""
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def _heading_ids(state: Any) -> None:
    tokens: list[Token] = state.tokens
    seen: dict[str, int] = {}
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and i + 1 < len(tokens):
            base = slug(tokens[i + 1].content)
            count = seen.get(base, 0)
            seen[base] = count + 1
            token.attrSet("id", base if count == 0 else f"{base}-{count}")


def _guide_links(state: Any) -> None:
    """`errors.md#x` between guides becomes `/docs/guides/errors#x`; other links are left alone."""
    for block in state.tokens:
        for token in block.children or ():
            if token.type == "link_open":
                href = str(token.attrGet("href") or "")
                if m := _MD_LINK.match(href):
                    page = "" if m.group(1) == INDEX else m.group(1)
                    token.attrSet("href", f"/docs/guides/{page}{m.group(2) or ''}")


@cache
def _renderer() -> MarkdownIt:
    from markdown_it import MarkdownIt  # on the first guide page asked for: no serving process pays it at start

    # CommonMark plus GitHub's tables; raw HTML in a guide is shown as text, never run.
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    md.core.ruler.push("heading_ids", _heading_ids)
    md.core.ruler.push("guide_links", _guide_links)
    return md


def _title(source: str, name: str) -> str:
    for line in source.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return name


@cache
def guides() -> dict[str, Guide]:
    """Every guide by name: the index first, then in the order the index links them, then the rest by name."""
    folder = _folder()
    if not folder.is_dir():
        return {}
    sources = {
        e.name.removesuffix(".md"): e.read_text(encoding="utf-8") for e in folder.iterdir() if e.name.endswith(".md")
    }
    index = sources.get(INDEX, "")

    def order(name: str) -> tuple[int, int, str]:
        at = index.find(f"]({name}.md")
        return (name != INDEX, at if at >= 0 else len(index), name)

    return {
        name: Guide(name, _title(sources[name], name), _renderer().render(sources[name]))
        for name in sorted(sources, key=order)
    }


def guide(name: str) -> Guide | None:
    if name != INDEX and not _NAME.match(name):
        return None
    return guides().get(name)
