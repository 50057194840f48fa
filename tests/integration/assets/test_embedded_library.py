"""The embedded asset library, the asset rows and `asset://` resolution, on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts.service import create_team
from modelport.clock import now_ms
from modelport.errors import InvalidParameters
from modelport.media.assets import repository as repo
from modelport.media.assets.library import Added, EmbeddedLibrary, NewAsset
from modelport.media.assets.probe import Probed, probe
from modelport.media.assets.refs import resolve_asset_ref
from modelport.media.assets.repository import AssetRecord
from modelport.media.assets.states import AssetStatus
from modelport.media.files.storage.local import LocalFileStore
from tests.support import media_make as media


def asset_from(tmp_path: Path, team_id: str, asset_id: str, data: bytes, kind: str = "image") -> NewAsset:
    path = tmp_path / f"{asset_id}.bin"
    path.write_bytes(data)
    return NewAsset(asset_id=asset_id, team_id=team_id, type=kind, name=None, path=path, probed=probe(path, len(data)))


def row(asset: NewAsset, added: Added, status: str | None = None) -> AssetRecord:
    now = now_ms()
    return AssetRecord(
        id=asset.asset_id,
        team_id=asset.team_id,
        provider="vendorA",
        type=asset.type,
        name=None,
        status=status or added.status,
        reason=None,
        backend="embedded",
        upstream_id=None,
        storage_key=added.storage_key,
        mime_type=asset.probed.mime_type,
        size_bytes=asset.probed.size_bytes,
        width=asset.probed.width,
        height=asset.probed.height,
        duration_ms=None,
        source_url="https://x/",
        created_at_ms=now,
        updated_at_ms=now,
    )


async def register(lib: EmbeddedLibrary, engine: AsyncEngine, asset: NewAsset) -> AssetRecord:
    added = await lib.add(asset)
    record = row(asset, added)
    await repo.insert_asset(engine, record)
    await lib.after_insert(asset, added)
    asset.path.unlink()  # the request ends: the fetched file goes, moderation has its own copy
    return record


async def test_moderation_settles_active_and_failed(engine: AsyncEngine, tmp_path: Path) -> None:
    team = await create_team(engine, "lib-team", tier="free")
    lib = EmbeddedLibrary(engine, LocalFileStore(tmp_path / "store"), work_dir=tmp_path / "work")
    try:
        good = await register(
            lib, engine, asset_from(tmp_path, team.id, "asset_good", media.video(850, 480, 2.0), "video")
        )
        cut = await register(
            lib,
            engine,
            asset_from(tmp_path, team.id, "asset_cut", media.truncated(media.video(850, 480, 4.0), 0.6), "video"),
        )
        assert good.status == cut.status == "processing"
        await lib.wait_idle()
        settled_good = await repo.get_asset(engine, team.id, "asset_good")
        settled_cut = await repo.get_asset(engine, team.id, "asset_cut")
        assert settled_good is not None and settled_good.status == "active"
        assert settled_cut is not None and settled_cut.status == "failed"
        assert settled_cut.reason and "decode" in settled_cut.reason
        assert list((tmp_path / "work").iterdir()) == []  # moderation copies are gone
        # A settled asset is never moved again (compare-and-swap on `processing`).
        assert not await repo.finish_processing(
            engine, "asset_good", status=AssetStatus.FAILED, reason="x", now_ms=now_ms()
        )
    finally:
        await lib.aclose()


async def test_processing_assets_are_moderated_again_at_start(engine: AsyncEngine, tmp_path: Path) -> None:
    team = await create_team(engine, "lib-restart", tier="free")
    store = LocalFileStore(tmp_path / "store")
    first = EmbeddedLibrary(engine, store, work_dir=tmp_path / "work")
    asset = asset_from(tmp_path, team.id, "asset_left", media.image(640, 480, "JPEG"))
    added = await first.add(asset)
    await repo.insert_asset(engine, row(asset, added))
    # The process stops before after_insert ran: the asset stays processing, its bytes are stored.
    await first.aclose()
    gone = asset_from(tmp_path, team.id, "asset_gone", media.image(640, 480))
    await repo.insert_asset(
        engine,
        dataclasses.replace(
            row(gone, Added(AssetStatus.PROCESSING, storage_key=f"assets/{team.id}/asset_gone")), status="processing"
        ),
    )

    work2 = tmp_path / "work2"
    work2.mkdir()
    stale, fresh = work2 / "moderate-old", work2 / "fetch-new"
    stale.write_bytes(b"x")
    fresh.write_bytes(b"x")
    os.utime(stale, (0, 0))  # left by a crash long ago
    second = EmbeddedLibrary(engine, store, work_dir=work2)
    try:
        await second.start()
        await second.wait_idle()
        left = await repo.get_asset(engine, team.id, "asset_left")
        lost = await repo.get_asset(engine, team.id, "asset_gone")
        assert left is not None and left.status == "active"
        assert lost is not None and lost.status == "failed" and lost.reason == "the stored file is gone"
        assert not stale.exists() and fresh.exists()  # a live process may still be writing a fresh one
    finally:
        await second.aclose()


async def test_asset_refs_resolve_only_active_assets_of_the_team(engine: AsyncEngine, tmp_path: Path) -> None:
    team = await create_team(engine, "refs-team", tier="free")
    other = await create_team(engine, "refs-other", tier="free")
    base = asset_from(tmp_path, team.id, "asset_a", media.image(400, 400))
    for asset_id, status, kind in [
        ("asset_a", "active", "image"),
        ("asset_p", "processing", "image"),
        ("asset_f", "failed", "image"),
        ("asset_au", "active", "audio"),
    ]:
        record = dataclasses.replace(row(base, Added(AssetStatus(status))), id=asset_id, type=kind)
        await repo.insert_asset(engine, record)

    found = await resolve_asset_ref(engine, team.id, "asset://asset_a", field="first_frame")
    assert found.id == "asset_a"
    cases = {
        "asset://asset_p": "still processing",
        "asset://asset_f": "failed",
        "asset://asset_au": "is audio",
        "asset://nope": "does not exist",
        "asset://": "not a valid",
        "asset://../x": "not a valid",
        "https://example.com/a.png": "must be an asset:// reference",
    }
    for value, words in cases.items():
        with pytest.raises(InvalidParameters) as info:
            await resolve_asset_ref(engine, team.id, value, field="first_frame")
        assert words in info.value.detail and info.value.param == "first_frame", value
    with pytest.raises(InvalidParameters) as foreign:
        await resolve_asset_ref(engine, other.id, "asset://asset_a")
    assert "does not exist" in foreign.value.detail


async def test_list_is_newest_first_with_total_and_status_filter(engine: AsyncEngine, tmp_path: Path) -> None:
    team = await create_team(engine, "list-team", tier="free")
    base = asset_from(tmp_path, team.id, "asset_0", media.image(400, 400))
    for i in range(5):
        record = dataclasses.replace(
            row(base, Added(AssetStatus.ACTIVE if i % 2 else AssetStatus.FAILED)),
            id=f"asset_{i}",
            created_at_ms=1000 + i,
        )
        await repo.insert_asset(engine, record)
    page, total = await repo.list_assets(engine, team.id, status=None, limit=2, offset=1)
    assert total == 5 and [r.id for r in page] == ["asset_3", "asset_2"]
    active, n = await repo.list_assets(engine, team.id, status="active", limit=10, offset=0)
    assert n == 2 and [r.id for r in active] == ["asset_3", "asset_1"]
    deleted = await repo.delete_asset(engine, team.id, "asset_3")
    assert deleted is not None and deleted.id == "asset_3"
    assert await repo.delete_asset(engine, team.id, "asset_3") is None


async def test_a_moderation_pass_over_its_time_limit_fails_the_asset(engine: AsyncEngine, tmp_path: Path) -> None:
    team = await create_team(engine, "lib-slow", tier="free")

    def slow_decoder(path: Path, probed: Probed) -> None:
        time.sleep(1.0)

    lib = EmbeddedLibrary(
        engine, LocalFileStore(tmp_path / "store"), work_dir=tmp_path / "work", decode=slow_decoder, time_limit=0.2
    )
    try:
        await register(lib, engine, asset_from(tmp_path, team.id, "asset_slow", media.image(400, 400)))
        await lib.wait_idle()
        record = await repo.get_asset(engine, team.id, "asset_slow")
        assert record is not None and record.status == "failed"
        assert record.reason == "moderation did not finish within 0.2 seconds"
    finally:
        await lib.aclose()
