"""`TeamHolds`: a team's open streams and waits are capped per team; a place comes back once, when released."""

from __future__ import annotations

import pytest

from modelport.errors import RequestLimited
from modelport.media.tasks.holds import TeamHolds


def test_each_team_has_its_own_places_and_a_release_counts_once() -> None:
    holds = TeamHolds(2)
    first, _second = holds.take("a"), holds.take("a")
    with pytest.raises(RequestLimited) as refused:
        holds.take("a")
    assert refused.value.status == 429 and refused.value.headers["Retry-After"]
    holds.take("b")  # another team is not held up
    first.release()
    first.release()  # twice: still one place
    assert holds.open("a") == 1
    holds.take("a")
    with pytest.raises(RequestLimited):
        holds.take("a")
