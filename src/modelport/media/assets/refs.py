"""`asset://<asset_id>` references in the image and video fields of video-generation models.

`resolve_asset_ref(engine, team_id, value)` is the one check task models call: the reference must name an
`active` asset of the same team; anything else is a clear 400 (another team's asset reads as unknown).
"""

from __future__ import annotations

import re

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.errors import InvalidParameters
from modelport.media.assets import repository as repo
from modelport.media.assets.repository import AssetRecord
from modelport.media.assets.states import AssetStatus

SCHEME = "asset://"
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def is_asset_ref(value: str) -> bool:
    return value.startswith(SCHEME)


async def resolve_asset_ref(
    engine: AsyncEngine, team_id: str, value: str, *, field: str = "image", kinds: tuple[str, ...] = ("image", "video")
) -> AssetRecord:
    """The active asset `value` names; raises InvalidParameters (400) naming `field` otherwise."""
    if not value.startswith(SCHEME):
        raise InvalidParameters(f"{field} must be an asset:// reference", param=field)
    asset_id = value[len(SCHEME) :]
    if not _ID.match(asset_id):
        raise InvalidParameters(f"{field}: {value[:80]!r} is not a valid asset:// reference", param=field)
    record = await repo.get_asset(engine, team_id, asset_id)
    if record is None:
        raise InvalidParameters(f"{field}: asset {asset_id!r} does not exist for this team", param=field)
    if record.status == AssetStatus.PROCESSING:
        raise InvalidParameters(
            f"{field}: asset {asset_id!r} is still processing; retry when it is active", param=field
        )
    if record.status != AssetStatus.ACTIVE:
        raise InvalidParameters(f"{field}: asset {asset_id!r} failed and cannot be used", param=field)
    if record.type not in kinds:
        raise InvalidParameters(f"{field}: asset {asset_id!r} is {record.type}, not {' or '.join(kinds)}", param=field)
    return record
