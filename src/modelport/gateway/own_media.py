"""Media parts that point at one of our own `download_url`s are read from storage and sent upstream inline.

The upstream cannot reach our media host (it may be on a private network), and fetching our own URL over
the network would be a needless round trip: the file is read from storage directly (no network fetch) and
becomes base64 data of its detected MIME type. Other URLs are left for the upstream to fetch.
"""

from __future__ import annotations

import base64
import dataclasses

from modelport.core.media import INLINE_MEDIA_MAX_BYTES
from modelport.core.messages import CanonicalRequest
from modelport.core.parts import FilePart, ImagePart, ToolResultPart
from modelport.errors import InvalidParameters
from modelport.media.files.service import FilesService


class OwnMedia:
    """Inlines parts that point at this deployment's own `download_url`s."""

    def __init__(self, files: FilesService, public_base_url: str) -> None:
        self._files = files
        self._base = public_base_url

    async def _inline(self, url: str) -> tuple[str, str] | None:
        """(base64 data, MIME type) of our own file at `url`, or None if the URL is not ours."""
        resolved = await self._files.resolve(url)
        if resolved is None:
            return None
        if resolved.size_bytes > INLINE_MEDIA_MAX_BYTES:
            aclose = getattr(resolved.chunks, "aclose", None)
            if aclose is not None:
                await aclose()
            raise InvalidParameters(f"media file {resolved.name!r} is over the 16 MB inline limit")
        data = b"".join([chunk async for chunk in resolved.chunks])
        return base64.b64encode(data).decode("ascii"), resolved.mime_type

    async def inline(self, request: CanonicalRequest) -> bool:
        """Rewrite parts that reference our own files in place; True if anything changed."""
        changed = False

        async def rewrite(part: ImagePart | FilePart) -> ImagePart | FilePart:
            nonlocal changed
            if not part.url or not part.url.startswith(self._base):
                return part
            found = await self._inline(part.url)
            if found is None:
                return part
            changed = True
            data, mime = found
            return dataclasses.replace(part, url=None, data=data, media_type=mime)

        for message in request.messages:
            for i, part in enumerate(message.parts):
                if isinstance(part, ImagePart | FilePart):
                    message.parts[i] = await rewrite(part)
                elif isinstance(part, ToolResultPart) and not isinstance(part.content, str):
                    content = tuple([await rewrite(p) if isinstance(p, ImagePart) else p for p in part.content])
                    message.parts[i] = dataclasses.replace(part, content=content)  # type: ignore[arg-type]
        return changed
