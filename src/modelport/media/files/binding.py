"""The per-process FilesService of a Runtime, and the URL resolver other modules call.

The service is created on first use and remembered per Runtime (weakly, so a discarded Runtime takes
it along). The text gateway may run in a process where the media app's `install` never ran; it still
gets a working service for `resolve_download_url`.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from modelport.media.files.service import FilesService, ResolvedFile
from modelport.media.files.storage import build_store
from modelport.runtime import Runtime

_services: WeakKeyDictionary[Runtime, FilesService] = WeakKeyDictionary()


def files_service(runtime: Runtime) -> FilesService:
    service = _services.get(runtime)
    if service is None:
        settings = runtime.settings
        store = build_store(settings.files, settings.data_dir)
        service = FilesService(
            engine=runtime.db,
            store=store,
            settings=settings.files,
            public_base_url=settings.effective_public_media_url,
            secret=runtime.secret_key,
        )
        _services[runtime] = service
        runtime.on_shutdown(store.aclose)
    return service


async def resolve_download_url(runtime: Runtime, url: str) -> ResolvedFile | None:
    """Read one of our own `download_url`s from storage, with no network fetch.

    Returns None when `url` is not one of ours (fetch it as any other URL). Raises InvalidParameters
    when it is ours but the signature is wrong or the file has expired or been deleted.
    The caller must consume (or `aclose()`) `ResolvedFile.chunks`.
    """
    return await files_service(runtime).resolve(url)
