"""FilesService against real databases (SQLite and PostgreSQL) and the local store.

Covers quota (including racing uploads), listing, deletion, retention sweeps run by several "processes"
at once, and resolution of our own download URLs.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterable, AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.errors import InvalidParameters, NotFound, PayloadTooLarge, QuotaExceeded
from modelport.media.files.service import FilesService
from modelport.media.files.storage.local import LocalFileStore
from modelport.media.files.tables import media_files
from modelport.settings import FilesSettings
from tests.unit.media.files import samples

BASE = "https://media.example.test"
T0 = 1_800_000_000_000


class Clock:
    def __init__(self) -> None:
        self.ms = T0

    def __call__(self) -> int:
        self.ms += 1  # distinct creation times keep "newest first" well defined
        return self.ms


class RecordingStore(LocalFileStore):
    """The local store, counting deletions per key (to prove no key is removed twice)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.deleted: Counter[str] = Counter()

    async def delete(self, key: str) -> None:
        self.deleted[key] += 1
        await super().delete(key)


def make_service(
    engine: AsyncEngine, root: Path, clock: Clock, **overrides: Any
) -> tuple[FilesService, RecordingStore]:
    store = RecordingStore(root / "store")
    service = FilesService(
        engine=engine,
        store=store,
        settings=FilesSettings(**overrides),
        public_base_url=BASE,
        secret="test-secret",
        clock=clock,
    )
    return service, store


async def body(data: bytes, size: int = 4096) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


async def upload(service: FilesService, team_id: str, data: bytes, name: str = "a.bin") -> dict[str, Any]:
    stream: AsyncIterable[bytes] = body(data)
    return await service.upload(team_id, stream, lambda: name)


async def read_all(chunks: AsyncIterator[bytes]) -> bytes:
    return b"".join([c async for c in chunks])


async def new_team(engine: AsyncEngine, name: str) -> str:
    return (await accounts.create_team(engine, name, tier="free")).id


async def test_upload_list_resolve_delete(engine: AsyncEngine, tmp_path: Path) -> None:
    clock = Clock()
    service, store = make_service(engine, tmp_path, clock)
    team = await new_team(engine, "files-a")
    png, wav = samples.image_bytes(), samples.wav_bytes()

    first = await upload(service, team, png, "dir/photo.png")
    second = await upload(service, team, wav, "voice")
    assert first["type"] == "image" and first["mime_type"] == "image/png"
    assert first["name"] == "photo.png" and first["size_bytes"] == len(png)
    assert second["type"] == "audio" and second["name"] == "voice"
    assert first["download_url"].startswith(BASE + "/files/" + first["file_id"] + "?")
    assert first["expires_at"] - first["created_at"] == 7 * 24 * 3600

    page = await service.list_page(team, limit=20, offset=0)
    assert page["total"] == 2
    assert [f["file_id"] for f in page["files"]] == [second["file_id"], first["file_id"]]
    assert (await service.list_page(team, limit=1, offset=1))["files"][0]["file_id"] == first["file_id"]

    resolved = await service.resolve(first["download_url"])
    assert resolved is not None and resolved.mime_type == "image/png" and resolved.size_bytes == len(png)
    assert await read_all(resolved.chunks) == png
    assert await service.resolve("https://elsewhere.example/files/x.png") is None

    assert await service.delete(team, first["file_id"]) == {"file_id": first["file_id"], "deleted": True}
    assert (await service.list_page(team, limit=20, offset=0))["total"] == 1
    assert not await store.exists(f"{first['file_id'][-2:]}/{first['file_id']}")
    assert len(files_under(tmp_path / "store")) == 1
    with pytest.raises(NotFound):
        await service.delete(team, first["file_id"])
    with pytest.raises(InvalidParameters, match="cannot be used"):
        await service.resolve(first["download_url"])


async def test_other_teams_files_are_invisible(engine: AsyncEngine, tmp_path: Path) -> None:
    service, _ = make_service(engine, tmp_path, Clock())
    alice, bob = await new_team(engine, "files-alice"), await new_team(engine, "files-bob")
    mine = await upload(service, alice, samples.image_bytes())
    with pytest.raises(NotFound):
        await service.delete(bob, mine["file_id"])
    with pytest.raises(NotFound):
        await service.delete(bob, "file_unknown")
    assert (await service.list_page(bob, limit=20, offset=0))["total"] == 0
    assert (await service.list_page(alice, limit=20, offset=0))["total"] == 1


@pytest.mark.parametrize(("limit", "offset"), [(0, 0), (101, 0), (-1, 0), (20, -1)])
async def test_list_bounds(engine: AsyncEngine, tmp_path: Path, limit: int, offset: int) -> None:
    service, _ = make_service(engine, tmp_path, Clock())
    with pytest.raises(InvalidParameters):
        await service.list_page("team_x", limit=limit, offset=offset)


async def test_refused_uploads_leave_nothing(engine: AsyncEngine, tmp_path: Path) -> None:
    service, _ = make_service(engine, tmp_path, Clock(), max_upload_bytes=10_000)
    team = await new_team(engine, "files-refused")
    with pytest.raises(InvalidParameters):
        await upload(service, team, samples.PDF_BYTES)
    with pytest.raises(PayloadTooLarge):
        await upload(service, team, samples.wav_bytes(seconds=2))
    assert (await service.list_page(team, limit=20, offset=0))["total"] == 0
    assert files_under(tmp_path / "store") == []


def files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


async def test_quota_counts_and_bytes_and_is_freed_by_delete(engine: AsyncEngine, tmp_path: Path) -> None:
    png = samples.image_bytes()
    service, _ = make_service(engine, tmp_path, Clock(), quota_files=2, quota_bytes=len(png) * 2 + 10)
    team = await new_team(engine, "files-quota")
    first = await upload(service, team, png)
    await upload(service, team, png)
    with pytest.raises(QuotaExceeded):
        await upload(service, team, png)
    await service.delete(team, first["file_id"])
    await upload(service, team, png)  # freed at once
    # Bytes: a file bigger than the room left is refused mid-stream.
    other = await new_team(engine, "files-quota-bytes")
    with pytest.raises(QuotaExceeded):
        await upload(service, other, samples.wav_bytes())


async def test_racing_uploads_never_exceed_the_file_quota(engine: AsyncEngine, tmp_path: Path) -> None:
    service, _ = make_service(engine, tmp_path, Clock(), quota_files=3)
    team = await new_team(engine, "files-race")
    results = await asyncio.gather(
        *(upload(service, team, samples.image_bytes()) for _ in range(8)), return_exceptions=True
    )
    ok = [r for r in results if isinstance(r, dict)]
    refused = [r for r in results if isinstance(r, QuotaExceeded)]
    assert len(ok) + len(refused) == 8
    assert len(ok) == 3  # serialised per team: exactly the quota, no more and no fewer
    async with engine.connect() as conn:
        rows = (await conn.execute(select(func.count()).select_from(media_files))).scalar_one()
    assert rows == len(ok)
    assert len(files_under(tmp_path / "store")) == len(ok)


async def test_expired_files_vanish_and_concurrent_sweepers_split_the_work(engine: AsyncEngine, tmp_path: Path) -> None:
    clock = Clock()
    service, store = make_service(engine, tmp_path, clock, retention_seconds=60, sweep_batch=3)
    team = await new_team(engine, "files-sweep")
    uploaded = [await upload(service, team, samples.image_bytes()) for _ in range(10)]
    url = uploaded[0]["download_url"]

    clock.ms += 61_000
    assert (await service.list_page(team, limit=20, offset=0))["total"] == 0
    with pytest.raises(InvalidParameters):
        await service.resolve(url)
    with pytest.raises(NotFound):
        await service.find_signed(uploaded[0]["file_id"], "9999999999", "bad")

    # Two more services on the same database stand in for other processes sweeping at the same moment.
    others = [make_service(engine, tmp_path, clock, retention_seconds=60, sweep_batch=3) for _ in range(2)]
    counts = await asyncio.gather(service.sweep_once(), *(s.sweep_once() for s, _ in others))
    assert sum(counts) == 10
    all_deleted = store.deleted + others[0][1].deleted + others[1][1].deleted
    assert len(all_deleted) == 10 and set(all_deleted.values()) == {1}
    assert files_under(tmp_path / "store") == []
    assert await service.sweep_once() == 0
