"""What a text request holds from the team's credit, and the output cap a team short of credit gets.

The hold assumes the most output the answer can have: the client's own cap, or the model's maximum output
(`upstreams.kinds.model_max_output`) when the client set none or set more. A team whose credit covers that is
held for it and the request goes upstream with no cap added (the same-protocol body stays the client's). A
team whose credit covers less is held what it has and its answer is capped to the output that covers, but at
least `min_output_tokens` (else 402): so no team can run an answer past what it can pay
(docs/api/text-gateway.md, Billing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from modelport.billing.pricing import estimate_input_tokens, plain_cost_micros
from modelport.billing.rates import hold_rates
from modelport.gateway.context import RequestContext
from modelport.upstreams.kinds import model_max_output


@dataclass(frozen=True, slots=True)
class OutputHold:
    estimate: int  # micro-USD held when the team can cover the whole bound
    minimum: int  # micro-USD below which the request is refused (402)
    bound: int  # output tokens the estimate assumes
    input_cost: Decimal  # the input part of the estimate, unrounded micro-USD
    output_rate: Decimal  # micro-USD per output token

    def covered_tokens(self, held: int) -> int:
        """The largest output cap whose estimate fits in `held` micro-USD (rounded half up, as charged)."""
        if self.output_rate <= 0:
            return self.bound
        # round_half_up(input + cap × rate) <= held  ⇔  input + cap × rate < held + 0.5
        room = (Decimal(held) + Decimal("0.5") - self.input_cost) / self.output_rate
        return max(1, min(self.bound, math.ceil(room) - 1))


def output_hold(ctx: RequestContext, min_output_tokens: int) -> OutputHold:
    prices = ctx.model.prices
    input_tokens = estimate_input_tokens(ctx.canonical)
    client_cap = ctx.canonical.max_output_tokens
    maximum = model_max_output(ctx.model)
    bound = min(client_cap, maximum) if client_cap else maximum
    # An estimate over the long-context threshold holds at the long-context rates.
    input_rate, output_rate = hold_rates(prices, input_tokens)
    input_cost = Decimal(input_tokens) * input_rate
    # At least one micro-USD: a team with nothing left is refused even for a (nearly) free model.
    estimate = max(1, plain_cost_micros(input_cost, bound, output_rate))
    floor = min(bound, min_output_tokens)
    minimum = estimate if floor == bound else max(1, plain_cost_micros(input_cost, floor, output_rate))
    return OutputHold(estimate, minimum, bound, input_cost, output_rate)
