"""Chart data for `static/console.js` (uPlot): x is UNIX seconds (one point per UTC day), series by label."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

DAY_S = 86_400
T = TypeVar("T")


def daily(
    first_day: int,
    last_day: int,
    rows: Iterable[T],
    *,
    day: Callable[[T], int],
    label: Callable[[T], str],
    value: Callable[[T], float],
    unit: str,
    top: int = 6,
    order: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """One series per label (the `top` largest by total; the rest summed as "other"), zero-filled per day."""
    days = list(range(first_day, last_day + 1))
    by_label: dict[str, dict[int, float]] = {}
    for row in rows:
        per_day = by_label.setdefault(label(row), {})
        per_day[day(row)] = per_day.get(day(row), 0.0) + value(row)
    totals = {name: sum(v.values()) for name, v in by_label.items()}
    ranked = sorted(by_label, key=lambda name: (-(order or totals).get(name, 0.0), name))
    keep, rest = ranked[:top], ranked[top:]
    series = [{"label": name, "values": [round(by_label[name].get(d, 0.0), 6) for d in days]} for name in keep]
    if rest:
        other = [round(sum(by_label[name].get(d, 0.0) for name in rest), 6) for d in days]
        series.append({"label": f"other ({len(rest)})", "values": other})
    has_data = any(totals.values())
    return {"x": [d * DAY_S for d in days] if has_data else [], "series": series, "unit": unit}
