"""Cross-model fallbacks: the models a request may be served by when its own cannot serve it.

A catalog model names `fallbacks` (tried in order once every deployment of the model failed or is cooling
down) and `context_fallbacks` (tried instead for a request over its `context_window`: by the gateway's
estimate before any call, or when an upstream answers `context_length_exceeded`). The key's and team's
model rules apply to each (`models_route.team_may_use`): a model this key may not use is left out. The
request's plan is the model's deployments, then each fallback's, then the context fallbacks' (marked
`context_only`: the attempt loop tries them only after a context overflow); one `max_attempts` bounds all.
"""

from __future__ import annotations

from collections.abc import Iterable

from modelport.accounts.auth import AuthContext
from modelport.billing.pricing import estimate_input_tokens
from modelport.catalog import CatalogStore
from modelport.catalog_spec import TextModel
from modelport.gateway.context import RequestContext
from modelport.gateway.models_route import team_may_use
from modelport.gateway.routing import Candidate, DeploymentRouter


async def resolve_fallbacks(
    catalog: CatalogStore, model: TextModel, auth: AuthContext
) -> tuple[tuple[TextModel, ...], tuple[TextModel, ...]]:
    """The model's fallbacks and context fallbacks this key may use, in catalog order."""
    snapshot = await catalog.get()

    def usable(ids: Iterable[str]) -> tuple[TextModel, ...]:
        found: list[TextModel] = []
        for model_id in ids:
            fallback = snapshot.text.get(model_id)
            if (
                fallback is not None
                and fallback.id != model.id
                and fallback not in found
                and team_may_use(fallback, auth)
            ):
                found.append(fallback)
        return tuple(found)

    return usable(model.fallbacks), usable(model.context_fallbacks)


def over_context(ctx: RequestContext) -> bool:
    """The request's estimated input is over its model's context window."""
    window = ctx.model.context_window
    return window is not None and estimate_input_tokens(ctx.canonical) > window


def request_plan(router: DeploymentRouter, ctx: RequestContext) -> list[Candidate]:
    """Every candidate of the request in the order they are tried."""
    plan = router.plan(ctx.model, ctx.session_id)
    if not ctx.fallbacks and not ctx.context_fallbacks:
        return plan
    if ctx.context_fallbacks and over_context(ctx):
        return [c for m in ctx.context_fallbacks for c in router.plan(m, ctx.session_id)]
    for fallback in ctx.fallbacks:
        plan += router.plan(fallback, ctx.session_id)
    for fallback in ctx.context_fallbacks:
        plan += router.plan(fallback, ctx.session_id, context_only=True)
    return plan
