"""The vendorA HTTP adapter against a local fake of its API: status mapping, retries, timeouts, breaker."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from modelport.media.assets.errors import AssetRejected, ProviderUnavailable
from modelport.media.assets.http_library import HttpLibrary
from modelport.media.assets.library import NewAsset
from modelport.media.assets.probe import Probed
from modelport.media.assets.repository import AssetRecord
from modelport.settings import AssetsSettings
from tests.support import media_make as media
from tests.support.fake_vendora import API_KEY, FakeVendorA


@pytest.fixture
async def fake() -> AsyncIterator[FakeVendorA]:
    server = FakeVendorA()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TEST_VENDORA_KEY", API_KEY)
    yield


def library(base_url: str, **overrides: object) -> HttpLibrary:
    settings = AssetsSettings.model_validate(
        {
            "backend": "http",
            "base_url": base_url,
            "api_key_env": "TEST_VENDORA_KEY",
            "retries": 2,
            "retry_backoff_seconds": 0,
            "breaker_failures": 3,
            "breaker_open_seconds": 60,
            "request_timeout_seconds": 2,
            **overrides,
        }
    )
    return HttpLibrary(settings)


def new_asset(tmp_path: Path, asset_id: str = "asset_1") -> NewAsset:
    path = tmp_path / "a.png"
    path.write_bytes(media.image(400, 400))
    probed = Probed("image", "image/png", path.stat().st_size, 400, 400)
    return NewAsset(asset_id=asset_id, team_id="team_1", type="image", name="logo", path=path, probed=probed)


def record_of(asset: NewAsset, upstream_id: str | None) -> AssetRecord:
    return AssetRecord(
        id=asset.asset_id,
        team_id=asset.team_id,
        provider="vendorA",
        type="image",
        name=None,
        status="processing",
        reason=None,
        backend="http",
        upstream_id=upstream_id,
        storage_key=None,
        mime_type="image/png",
        size_bytes=1,
        width=None,
        height=None,
        duration_ms=None,
        source_url="x",
        created_at_ms=0,
        updated_at_ms=0,
    )


async def test_upload_then_poll_to_active(fake: FakeVendorA, tmp_path: Path) -> None:
    lib = library(fake.base_url)
    try:
        asset = new_asset(tmp_path)
        added = await lib.add(asset)
        assert added.status == "processing" and added.upstream_id is not None
        call = fake.calls[-1]
        assert call.idempotency_key == "asset_1" and call.fields == {"type": "image", "name": "logo"}
        assert call.file_size == asset.probed.size_bytes
        assert await lib.refresh(record_of(asset, added.upstream_id)) == ("active", None)
        await lib.remove(record_of(asset, added.upstream_id))
        assert fake.calls[-1].method == "DELETE" and added.upstream_id not in fake.assets
    finally:
        await lib.aclose()


async def test_failed_status_carries_the_reason(fake: FakeVendorA, tmp_path: Path) -> None:
    fake.fail_assets = True
    lib = library(fake.base_url)
    try:
        asset = new_asset(tmp_path)
        added = await lib.add(asset)
        assert await lib.refresh(record_of(asset, added.upstream_id)) == ("failed", "moderation: not allowed")
        assert await lib.refresh(record_of(asset, "va-unknown")) == ("failed", "the provider no longer has this asset")
    finally:
        await lib.aclose()


async def test_rejection_is_a_400_with_the_reason(fake: FakeVendorA, tmp_path: Path) -> None:
    fake.reject = True
    lib = library(fake.base_url)
    try:
        with pytest.raises(AssetRejected) as info:
            await lib.add(new_asset(tmp_path))
        assert info.value.status == 400 and info.value.reason == "content policy: rejected"
    finally:
        await lib.aclose()


async def test_5xx_is_retried_with_the_same_idempotency_key(fake: FakeVendorA, tmp_path: Path) -> None:
    fake.fail_next = 2
    lib = library(fake.base_url)
    try:
        added = await lib.add(new_asset(tmp_path))
        assert added.upstream_id is not None
        posts = [c for c in fake.calls if c.method == "POST"]
        assert len(posts) == 3 and {c.idempotency_key for c in posts} == {"asset_1"}
        assert all(c.file_size == posts[0].file_size for c in posts)  # every retry re-sends the whole file
        assert len(fake.assets) == 1
    finally:
        await lib.aclose()


async def test_breaker_opens_after_repeated_failures_and_half_opens(fake: FakeVendorA, tmp_path: Path) -> None:
    fake.fail_next = 1000
    lib = library(fake.base_url, retries=0, breaker_failures=3, breaker_open_seconds=0.3)
    try:
        for _ in range(3):
            with pytest.raises(ProviderUnavailable):
                await lib.add(new_asset(tmp_path))
        assert lib.breaker.state == "open"
        seen = len(fake.calls)
        with pytest.raises(ProviderUnavailable):
            lib.ensure_available()
        with pytest.raises(ProviderUnavailable):
            await lib.add(new_asset(tmp_path))
        assert len(fake.calls) == seen  # refused without a call
        import asyncio

        await asyncio.sleep(0.35)
        fake.fail_next = 0
        lib.ensure_available()
        added = await lib.add(new_asset(tmp_path, "asset_2"))  # the half-open trial succeeds and closes it
        assert added.upstream_id is not None and lib.breaker.state == "closed"
    finally:
        await lib.aclose()


async def test_timeouts_and_unreachable_are_503(fake: FakeVendorA, tmp_path: Path) -> None:
    fake.delay = 5
    slow = library(fake.base_url, retries=1, request_timeout_seconds=0.3)
    try:
        with pytest.raises(ProviderUnavailable) as info:
            await slow.add(new_asset(tmp_path))
        assert info.value.status == 503
        assert info.value.media_message == "Service unavailable: asset provider is temporarily unavailable"
    finally:
        await slow.aclose()
    closed = library("http://127.0.0.1:9", retries=1)
    try:
        with pytest.raises(ProviderUnavailable):
            await closed.add(new_asset(tmp_path))
    finally:
        await closed.aclose()


async def test_a_wrong_api_key_is_503_not_retried(
    fake: FakeVendorA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_VENDORA_KEY", "wrong")
    lib = library(fake.base_url)
    try:
        with pytest.raises(ProviderUnavailable):
            await lib.add(new_asset(tmp_path))
        assert len(fake.calls) == 1
    finally:
        await lib.aclose()
