"""Where a media model's tasks run, decided once per task: an embedded model on this machine (the catalog
entry's `runner`) or a hosted media provider (its `upstream`).

Creation asks the placement to check the input's media fields and for the billing units to freeze; the
executor runs the task through the same placement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.catalog_spec import HostedProvider, MediaModel
from modelport.media.tasks.hosted import media as hosted
from modelport.media.tasks.inputs import check_input_url
from modelport.media.tasks.models import TaskModelSpec, task_model_spec
from modelport.net import SafeFetcher


@dataclass(frozen=True, slots=True)
class Embedded:
    """The model renders on this machine, in the render process (media/tasks/render/); the serving process
    knows it by its `runner` name and declared fields, without importing it."""

    model: MediaModel
    name: str
    spec: TaskModelSpec

    async def check_inputs(
        self, engine: AsyncEngine, fetcher: SafeFetcher, team_id: str, params: dict[str, Any]
    ) -> None:
        for field in self.spec.url_fields:
            if field in params:
                await check_input_url(fetcher, engine, team_id, field, params[field])

    def units(self, params: dict[str, Any]) -> int:
        return self.spec.units(params)


@dataclass(frozen=True, slots=True)
class Hosted:
    """A provider runs the task; the run calls it and stores what it returns."""

    model: MediaModel
    provider: HostedProvider

    async def check_inputs(
        self, engine: AsyncEngine, fetcher: SafeFetcher, team_id: str, params: dict[str, Any]
    ) -> None:
        await hosted.check_inputs(engine, fetcher, team_id, self.provider, params)

    def units(self, params: dict[str, Any]) -> int:
        return hosted.units(self.model, params)


Placement = Embedded | Hosted


async def placement_of(model: MediaModel | None) -> Placement | None:
    """None: no such model, or it names no provider and no embedded model this build has."""
    if model is None:
        return None
    if model.upstream is not None:
        return Hosted(model, model.upstream)
    spec = task_model_spec(model.runner)
    return None if spec is None or model.runner is None else Embedded(model, model.runner, spec)
