"""Bar charts drawn on the server: the geometry of an inline SVG that the template writes out.

No chart library and no script: the page keeps its strict Content-Security-Policy
(``memoryhub/web/csp.py``). Bars are ``<rect>`` elements with presentation attributes
(coordinates only); colours come from the stylesheet through classes, since ``style``
attributes are inline styles the policy refuses. Each bar carries a ``<title>`` (the
browser's tooltip, and what a screen reader reads), and the template adds the figures as a
table below each chart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date

from django.template.defaultfilters import filesizeformat

from memoryhub.selectors.usage import DayUsage

# The viewBox: the SVG scales to the width of its box, the height follows.
WIDTH, HEIGHT = 300, 100
TOP_MARGIN = 14  # room for the largest value's label above the tallest bar
GAP = 0.2  # the share of each day's slot left between bars


@dataclass(frozen=True)
class Bar:
    day: date
    value: int | None  # None: nothing measured that day (no bar)
    label: str  # "3 Mar: 12 writes"
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class BarChart:
    name: str  # the DOM id's stem, and the CSS class of its bars
    title: str
    bars: list[Bar]
    top_label: str  # the largest value, written at the top of the chart
    width: int = WIDTH
    height: int = HEIGHT

    @property
    def baseline(self) -> int:
        return self.height


def _round(value: float) -> float:
    return round(value, 2)  # shorter markup; a hundredth of a unit is far below a pixel


def bar_chart(
    *, name: str, title: str, points: Sequence[tuple[date, int | None]],
    describe: Callable[[int], str],
) -> BarChart:
    """One bar per point, oldest first, scaled to the largest value. ``describe`` writes a
    value for people ("12 writes", "3.4 KB")."""
    known = [value for _, value in points if value is not None]
    top = max(known, default=0)
    slot = WIDTH / max(len(points), 1)
    usable = HEIGHT - TOP_MARGIN
    bars = []
    for index, (day, value) in enumerate(points):
        height = usable * value / top if value and top else 0.0
        bars.append(Bar(
            day=day, value=value,
            label=f"{day.day} {day:%b}: {describe(value) if value is not None else 'no reading'}",
            x=_round(index * slot + slot * GAP / 2), y=_round(HEIGHT - height),
            width=_round(slot * (1 - GAP)), height=_round(height),
        ))
    return BarChart(name=name, title=title, bars=bars, top_label=describe(top))


def _count(noun: str) -> Callable[[int], str]:
    return lambda value: f"{value:,} {noun}{'' if value == 1 else 's'}"


def usage_charts(days: Sequence[DayUsage]) -> list[BarChart]:
    """The overview's three charts: writes, recalls and stored bytes per day."""
    return [
        bar_chart(name="writes", title="Memory writes per day",
                  points=[(d.day, d.writes) for d in days], describe=_count("write")),
        bar_chart(name="recalls", title="Recalls per day",
                  points=[(d.day, d.recalls) for d in days], describe=_count("recall")),
        bar_chart(name="stored", title="Stored at the end of each day",
                  points=[(d.day, d.stored_bytes) for d in days],
                  describe=lambda value: str(filesizeformat(value))),
    ]
