"""An asset's status: the values of `provider_assets.status` (and the API's `status`), and the moves between
them that the repository's compare-and-swap makes (`repository.finish_processing`)."""

from __future__ import annotations

from enum import StrEnum


class AssetStatus(StrEnum):
    # Stored and moderated: tasks may use it (`refs.py`).
    ACTIVE = "active"
    # Stored, moderation not finished yet (the embedded library's pass, or the hosted provider's review):
    # a task naming it is refused until it ends.
    PROCESSING = "processing"
    # Refused by moderation, or gone from the provider; `reason` says why. Never used by a task.
    FAILED = "failed"


# Every status an asset may move to from each status: moderation ends once, an ended asset never changes.
TRANSITIONS: dict[AssetStatus, tuple[AssetStatus, ...]] = {
    AssetStatus.PROCESSING: (AssetStatus.ACTIVE, AssetStatus.FAILED),
    AssetStatus.ACTIVE: (),
    AssetStatus.FAILED: (),
}
