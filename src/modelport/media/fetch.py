"""Our own download URLs for the SSRF-safe fetcher: read from the file store, never over the network.

Every feature that reads or calls a user URL (asset registration, webhook delivery) uses the process's one
`SafeFetcher` (`services[FETCHER]`): one connection pool, one policy, closed at shutdown.
"""

from __future__ import annotations

from modelport.errors import InvalidParameters
from modelport.media.files.service import FilesService, ResolvedFile
from modelport.media.files.signing import parse_download_url
from modelport.net import SafeFetcher
from modelport.services import ServiceKey

FETCHER: ServiceKey[SafeFetcher] = ServiceKey("url fetcher")


class OwnDownloadUrls:
    """`net.OwnUrls` over the media file store."""

    def __init__(self, files: FilesService, public_base_url: str) -> None:
        self._files = files
        self._base = public_base_url

    def is_own(self, url: str) -> bool:
        return parse_download_url(self._base, url) is not None

    async def open(self, url: str) -> ResolvedFile:
        resolved = await self._files.resolve(url)
        if resolved is None:  # is_own said yes, so this is a malformed URL of ours
            raise InvalidParameters("the media file URL cannot be used")
        return resolved
