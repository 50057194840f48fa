"""Media URLs in task inputs (`image_url`, `video_url`): checked when the task is created, read by the worker.

A value is one of our own download URLs (read from the file store), `asset://<id>` of an active asset of the
task's team (read from the file store where the embedded asset library keeps it), or an https URL fetched
through the SSRF-safe fetcher (private addresses, odd ports and redirects to them refused). What can be
decided without the network is checked at creation (a 400 naming the field); a fetch that fails when the task
runs fails the task (`input_unavailable`), and the price is refunded.
"""

from __future__ import annotations

import asyncio

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.catalog_spec import HostedProvider
from modelport.errors import InvalidParameters, ServiceError
from modelport.media.assets.refs import is_asset_ref, resolve_asset_ref
from modelport.media.files.storage import FileStore, ObjectMissing
from modelport.net import FetchError, SafeFetcher, UrlFormatRefused

# The largest input file a task reads (an image or a short video).
MAX_INPUT_BYTES = 50 * 1024 * 1024
# How long one input may take to download.
FETCH_SECONDS = 60.0


class InputUnavailable(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def media_kinds(field: str) -> tuple[str, ...]:
    """The asset types a media field takes: a video field (`video_url`, `reference_video`) videos, any other
    images."""
    return ("video",) if "video" in field else ("image",)


async def check_input_url(
    fetcher: SafeFetcher,
    engine: AsyncEngine,
    team_id: str,
    field: str,
    value: object,
    *,
    provider: HostedProvider | None = None,
) -> None:
    """Raises InvalidParameters (400) naming `field` if the value can never be read. `provider`: the field
    is one of a hosted provider's `asset_fields`, read by the provider itself: an asset must be in its asset
    library, and an https URL's name is not resolved here."""
    if not isinstance(value, str):
        raise InvalidParameters(f"{field} must be a string", param=field)
    if is_asset_ref(value):
        record = await resolve_asset_ref(engine, team_id, value, field=field, kinds=media_kinds(field))
        if provider is not None and record.upstream_id is None:
            raise InvalidParameters(
                f"{field}: asset {record.id!r} is not held by provider {provider.name}'s asset library", param=field
            )
        return
    if fetcher.is_own(value):
        return
    bad_form = InvalidParameters(
        f"{field} must be an https URL, one of our download URLs or asset://<asset_id>", param=field
    )
    await check_public_url(fetcher, value, param=field, bad_form=bad_form, resolve=provider is None)


async def check_public_url(
    fetcher: SafeFetcher, url: str, *, param: str, bad_form: ServiceError, resolve: bool = True
) -> None:
    """A URL we (or a provider) will fetch later: `bad_form` when it is no https URL without userinfo, a 400
    naming `param` when its address is refused. `resolve`: its name is looked up now, so a name that resolves
    to a private address is refused at once, not when it is fetched."""
    try:
        if resolve:
            await fetcher.check_resolved(url)
        else:
            fetcher.check(url)
    except UrlFormatRefused as exc:
        raise bad_form from exc
    except FetchError as exc:
        raise InvalidParameters(f"{param} cannot be used: {exc.detail}", param=param) from exc


async def read_input(
    fetcher: SafeFetcher, engine: AsyncEngine, store: FileStore, team_id: str, field: str, value: str
) -> bytes:
    """The bytes `value` names; raises InputUnavailable saying why not."""
    try:
        if is_asset_ref(value):
            record = await resolve_asset_ref(engine, team_id, value, field=field, kinds=media_kinds(field))
            if record.storage_key is None:
                raise InputUnavailable(f"{field}: asset {record.id!r} has no copy on this server")
            chunks = [c async for c in await store.open_range(record.storage_key, 0, record.size_bytes)]
            return b"".join(chunks)
        fetched = await fetcher.fetch_to_file(value, max_bytes=MAX_INPUT_BYTES, time_limit=FETCH_SECONDS)
        with fetched:
            return await asyncio.to_thread(fetched.path.read_bytes)
    except FetchError as exc:
        raise InputUnavailable(f"{field} could not be read: {exc.detail}") from exc
    except ObjectMissing as exc:
        raise InputUnavailable(f"{field}: the stored file is gone") from exc
    except ServiceError as exc:
        raise InputUnavailable(f"{field} could not be read: {exc}") from exc
