"""Server-side SVG charts for the HTML report: line charts with ±1 SEM bands, heatmaps.

Plain SVG strings (no JavaScript, no fonts or images from elsewhere), so the charts show in any
browser from ``file://`` and can be checked by parsing. Every text is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import NamedTuple

#: Line colours (colour-blind safe, Okabe-Ito first), cycled by series index.
PALETTE = (
    "#0072B2",
    "#D55E00",
    "#009E73",
    "#CC79A7",
    "#E69F00",
    "#56B4E9",
    "#000000",
    "#F0E442",
    "#882255",
    "#44AA99",
)


class Series(NamedTuple):
    """One line: values (None: unknown) at ``x`` with an optional ±band half-width."""

    label: str
    x: Sequence[float]
    y: Sequence[float | None]
    band: Sequence[float | None] | None = None
    slot: int | None = None  # palette slot, so one arm keeps its colour across panels

    def colour(self, index: int) -> str:
        """The line's colour (its slot's, else its position's)."""
        return colour(self.slot if self.slot is not None else index)


class Frame(NamedTuple):
    """Where the plot area lies inside the SVG and which data range it maps."""

    left: float
    top: float
    width: float
    height: float
    x0: float
    x1: float
    y0: float
    y1: float

    def px(self, x: float) -> float:
        """Horizontal pixel of data ``x``."""
        span = self.x1 - self.x0 or 1.0
        return self.left + (x - self.x0) / span * self.width

    def py(self, y: float) -> float:
        """Vertical pixel of data ``y`` (up is larger)."""
        span = self.y1 - self.y0 or 1.0
        return self.top + self.height - (y - self.y0) / span * self.height


def colour(index: int) -> str:
    """The palette colour of series ``index``."""
    return PALETTE[index % len(PALETTE)]


def _finite(values: Sequence[float | None]) -> list[float]:
    return [v for v in values if v is not None and math.isfinite(v)]


def data_range(series: Sequence[Series]) -> tuple[float, float]:
    """The y range covering every line and band (a unit range around a constant)."""
    values: list[float] = []
    for s in series:
        values += _finite(s.y)
        if s.band is not None:
            for y, b in zip(s.y, s.band, strict=True):
                if y is not None and b is not None and math.isfinite(y) and math.isfinite(b):
                    values += [y - b, y + b]
    if not values:
        return 0.0, 1.0
    low, high = min(values), max(values)
    if high - low < 1e-9:
        return low - 0.5, high + 0.5
    pad = 0.05 * (high - low)
    return low - pad, high + pad


def _runs(points: list[tuple[float, float] | None]) -> list[list[tuple[float, float]]]:
    """Split a polyline at unknown points."""
    runs: list[list[tuple[float, float]]] = [[]]
    for p in points:
        if p is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append(p)
    return [r for r in runs if r]


def _path(points: list[tuple[float, float]]) -> str:
    return "M" + "L".join(f"{x:.1f},{y:.1f}" for x, y in points)


def _line(frame: Frame, s: Series, stroke: str, index: int) -> str:
    points = [
        (frame.px(x), frame.py(y)) if y is not None and math.isfinite(y) else None
        for x, y in zip(s.x, s.y, strict=True)
    ]
    parts = []
    for run in _runs(points):
        if len(run) == 1:
            x, y = run[0]
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2" fill="{stroke}" data-series="{index}"/>'
            )
        else:
            parts.append(
                f'<path d="{_path(run)}" fill="none" stroke="{stroke}" stroke-width="1.6"'
                f' data-series="{index}"/>'
            )
    return "".join(parts)


def _markers(frame: Frame, s: Series, fill: str) -> str:
    return "".join(
        f'<circle cx="{frame.px(x):.1f}" cy="{frame.py(y):.1f}" r="2.6" fill="{fill}"'
        ' class="marker"/>'
        for x, y in zip(s.x, s.y, strict=True)
        if y is not None and math.isfinite(y)
    )


def _band(frame: Frame, s: Series, fill: str) -> str:
    if s.band is None:
        return ""
    upper: list[tuple[float, float] | None] = []
    lower: list[tuple[float, float] | None] = []
    for x, y, b in zip(s.x, s.y, s.band, strict=True):
        ok = y is not None and b is not None and math.isfinite(y) and math.isfinite(b)
        upper.append((frame.px(x), frame.py(y + b)) if ok else None)  # type: ignore[operator]
        lower.append((frame.px(x), frame.py(y - b)) if ok else None)  # type: ignore[operator]
    parts = []
    for up, low in zip(_runs(upper), _runs(lower), strict=True):
        polygon = up + low[::-1]
        parts.append(
            f'<path d="{_path(polygon)}Z" fill="{fill}" fill-opacity="0.15" stroke="none"/>'
        )
    return "".join(parts)


def _axes(frame: Frame, x_label: str) -> str:
    parts = [
        f'<rect x="{frame.left}" y="{frame.top}" width="{frame.width}" height="{frame.height}"'
        ' fill="none" stroke="#bbb"/>'
    ]
    for k in range(5):
        y = frame.y0 + (frame.y1 - frame.y0) * k / 4
        py = frame.py(y)
        parts.append(
            f'<line x1="{frame.left}" x2="{frame.left + frame.width}" y1="{py:.1f}" y2="{py:.1f}"'
            ' stroke="#eee"/>'
            f'<text x="{frame.left - 4}" y="{py + 3:.1f}" text-anchor="end" class="tick">'
            f"{y:.2f}</text>"
        )
    for k in range(5):
        x = frame.x0 + (frame.x1 - frame.x0) * k / 4
        parts.append(
            f'<text x="{frame.px(x):.1f}" y="{frame.top + frame.height + 12}"'
            f' text-anchor="middle" class="tick">{x:g}</text>'
        )
    parts.append(
        f'<text x="{frame.left + frame.width / 2}" y="{frame.top + frame.height + 25}"'
        f' text-anchor="middle" class="axis">{escape(x_label)}</text>'
    )
    return "".join(parts)


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str = "dialogue progress (%)",
    y_range: tuple[float, float] | None = None,
    note: str | None = None,
    series_notes: Sequence[str] | None = None,
    width: int = 360,
    height: int = 230,
    legend: bool = True,
    markers: bool = False,
) -> str:
    """A line chart with ±bands, a title, a legend, an optional note and optional per-line notes
    (e.g. each line's Δ), drawn in the line's colour at the plot's top right; ``markers`` puts a
    dot on every known point (where the points are few and each one means something)."""
    legend_rows = len(series) if legend else 0
    total_height = height + 6 + 14 * legend_rows
    x_all = [x for s in series for x in s.x] or [0.0, 1.0]
    low, high = y_range if y_range is not None else data_range(series)
    frame = Frame(44, 22, width - 54, height - 58, min(x_all), max(x_all), low, high)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}"'
        f' height="{total_height}" viewBox="0 0 {width} {total_height}" role="img">'
        f"<title>{escape(title)}</title>"
        f'<text x="{width / 2}" y="14" text-anchor="middle" class="title">{escape(title)}</text>',
        _axes(frame, x_label),
    ]
    for i, s in enumerate(series):
        parts.append(_band(frame, s, s.colour(i)))
    for i, s in enumerate(series):
        parts.append(_line(frame, s, s.colour(i), i))
        if markers:
            parts.append(_markers(frame, s, s.colour(i)))
    if note:
        parts.append(
            f'<text x="{frame.left + 4}" y="{frame.top + 12}" class="note">{escape(note)}</text>'
        )
    for i, text in enumerate(series_notes or ()):
        # Each line's note is drawn in the line's colour (the stylesheet leaves its fill alone).
        parts.append(
            f'<text x="{frame.left + frame.width - 3}" y="{frame.top + 10 + 10 * i}"'
            f' text-anchor="end" class="series-note" fill="{series[i].colour(i)}"'
            f' data-series="{i}">{escape(text)}</text>'
        )
    for i, s in enumerate(series[:legend_rows]):
        y = height + 8 + 14 * i
        parts.append(
            f'<rect x="{frame.left}" y="{y - 8}" width="10" height="3" fill="{s.colour(i)}"'
            f' class="swatch" data-series="{i}"/>'
            f'<text x="{frame.left + 14}" y="{y - 4}" class="legend">{escape(s.label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _heat_rgb(value: float | None) -> tuple[int, int, int]:
    """Red for +1, white for 0, blue for -1; grey where undefined."""
    if value is None or not math.isfinite(value):
        return (221, 221, 221)
    v = max(-1.0, min(1.0, value))
    if v >= 0:
        other = round(255 * (1 - v))
        return (255, other, other)
    other = round(255 * (1 + v))
    return (other, other, 255)


def _heat(value: float | None) -> str:
    red, green, blue = _heat_rgb(value)
    return f"rgb({red},{green},{blue})"


def relative_luminance(rgb: tuple[int, int, int]) -> float:
    """WCAG 2 relative luminance of an sRGB colour (0 black, 1 white)."""

    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    red, green, blue = (linear(c) for c in rgb)
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def text_colour_on(rgb: tuple[int, int, int]) -> str:
    """Black or white, whichever contrasts more with the background ``rgb`` (at least 4.58:1
    for any background, above WCAG's 4.5:1 for normal text)."""
    luminance = relative_luminance(rgb)
    on_black = (luminance + 0.05) / 0.05
    on_white = 1.05 / (luminance + 0.05)
    return "#000" if on_black >= on_white else "#fff"


def heatmap(names: Sequence[str], values: Sequence[Sequence[float | None]], *, title: str) -> str:
    """An annotated correlation heatmap (values in [-1, 1])."""
    cell, left, top = 38, 70, 30
    size = len(names)
    width, height = left + cell * size + 10, top + cell * size + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}"'
        f' height="{height}" viewBox="0 0 {width} {height}" role="img">'
        f"<title>{escape(title)}</title>"
        f'<text x="{width / 2}" y="14" text-anchor="middle" class="title">{escape(title)}</text>'
    ]
    for j, name in enumerate(names):
        parts.append(
            f'<text x="{left + cell * j + cell / 2}" y="{top - 4}" text-anchor="middle"'
            f' class="tick">{escape(name)}</text>'
        )
    for i, name in enumerate(names):
        y = top + cell * i
        parts.append(
            f'<text x="{left - 4}" y="{y + cell / 2 + 3}" text-anchor="end" class="tick">'
            f"{escape(name)}</text>"
        )
        for j in range(size):
            value = values[i][j]
            text = "–" if value is None or not math.isfinite(value) else f"{value:.2f}"
            x = left + cell * j
            # The number's colour is chosen per cell, so it stays readable on saturated ones.
            parts.append(
                f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{_heat(value)}"'
                ' stroke="#fff"/>'
                f'<text x="{x + cell / 2}" y="{y + cell / 2 + 3}" text-anchor="middle"'
                f' class="cell" fill="{text_colour_on(_heat_rgb(value))}">{text}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)
