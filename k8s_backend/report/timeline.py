"""An executor timeline a person can look at: one self-contained HTML file, loading nothing.

:class:`Timeline` is plain data: a row of coloured spans per executor (requested, pending with its
reason, running, registered, ended with its exit code), the target over time, and markers for kills,
disruption notices, decommissions (started, finished with its blocks migrated, gone) and API errors.
:func:`render_html` draws it as inline SVG; hovering a span or a marker shows its details (SVG
``<title>``), so the file needs no script and works offline. The data comes from the backend's executor
tracker at ``stop()`` (:func:`k8s_backend.report.from_histories`) or, for a running application, from
what the cluster shows of it (:func:`k8s_backend.report.from_pods`), with notes on the page saying what
that cannot show.
"""

from __future__ import annotations

import html
import time
from collections.abc import Sequence

import attrs

# Span kinds, in the order a legend lists them, and their colours.
COLOURS: dict[str, str] = {
    "requested": "#c9d1d9",
    "pending": "#f2cc60",
    "running": "#58a6ff",
    "registered": "#3fb950",
    "decommissioning": "#a371f7",
    "terminating": "#db6d28",
    "succeeded": "#8b949e",
    "failed": "#f85149",
    "lost": "#b62324",
    "deleted": "#6e7681",  # its pod is gone, how it ended is not known
}
MARKER_COLOURS = {
    "kill": "#db6d28",
    "notice": "#d29922",  # Kubernetes gave notice it will take an executor's pod away
    "decommission": "#a371f7",
    "migrated": "#1b7c83",  # a decommissioned executor finished: its blocks migrated (or none were to)
    "gone": "#8b949e",  # an executor decommissioned on notice has ended
    "api-error": "#f85149",
    "note": "#6e7681",
}

ROW = 22  # px per executor row
LEFT = 110  # px for the row labels
WIDTH = 1100  # px of the time axis
TARGET_HEIGHT = 90  # px of the target chart


@attrs.frozen
class Span:
    """One state of one executor, from ``start`` to ``end`` (epoch seconds)."""

    kind: str
    start: float
    end: float
    detail: str = ""


@attrs.frozen
class ExecutorLine:
    executor_id: str
    spans: tuple[Span, ...]
    ended: str = ""  # how it ended ("exit 137 (SIGKILL, possible container OOM)"), "" while it runs


@attrs.frozen
class Marker:
    time: float
    kind: str  # a key of MARKER_COLOURS
    text: str


@attrs.frozen
class Timeline:
    """Everything the HTML shows; times are epoch seconds."""

    title: str
    start: float
    end: float
    executors: tuple[ExecutorLine, ...] = ()
    target: tuple[tuple[float, int], ...] = ()  # (time, total target) steps
    markers: tuple[Marker, ...] = ()
    notes: tuple[str, ...] = ()  # what the page cannot show, said on it (e.g. for `status --timeline`)


def _iso(when: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


class _Axis:
    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.span = max(end - start, 1e-3)

    def x(self, when: float) -> float:
        return LEFT + WIDTH * min(max((when - self.start) / self.span, 0.0), 1.0)


def _ticks(axis: _Axis, top: int, height: int) -> list[str]:
    parts = []
    for i in range(11):
        when = axis.start + axis.span * i / 10
        x = axis.x(when)
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + height}" class="grid"/>')
        label = f"+{when - axis.start:.0f}s" if axis.span >= 10 else f"+{when - axis.start:.1f}s"
        parts.append(f'<text x="{x:.1f}" y="{top - 4}" class="tick">{label}</text>')
    return parts


def _span_svg(axis: _Axis, span: Span, y: int, executor_id: str) -> str:
    x1, x2 = axis.x(span.start), axis.x(span.end)
    width = max(x2 - x1, 1.5)  # an instant still shows
    tip = f"executor {executor_id}: {span.kind} {_iso(span.start)} to {_iso(span.end)}"
    if span.detail:
        tip += f" ({span.detail})"
    colour = COLOURS.get(span.kind, "#6e7681")
    return (
        f'<rect x="{x1:.1f}" y="{y}" width="{width:.1f}" height="{ROW - 6}" fill="{colour}" '
        f'class="span {span.kind}"><title>{_esc(tip)}</title></rect>'
    )


def _target_svg(axis: _Axis, steps: Sequence[tuple[float, int]], top: int, end: float) -> list[str]:
    if not steps:
        return []
    highest = max(1, *(value for _, value in steps))
    def y(value: int) -> float:
        return top + TARGET_HEIGHT - TARGET_HEIGHT * value / highest
    points = []
    for i, (when, value) in enumerate(steps):
        following = steps[i + 1][0] if i + 1 < len(steps) else end
        points += [f"{axis.x(when):.1f},{y(value):.1f}", f"{axis.x(following):.1f},{y(value):.1f}"]
    parts = [
        f'<text x="4" y="{top + 12}" class="label">target</text>',
        f'<text x="4" y="{top + 28}" class="note">max {highest}</text>',
        f'<polyline points="{" ".join(points)}" class="target"/>',
    ]
    for when, value in steps:
        parts.append(
            f'<circle cx="{axis.x(when):.1f}" cy="{y(value):.1f}" r="3" class="step">'
            f"<title>{_esc(f'target {value} at {_iso(when)}')}</title></circle>"
        )
    return parts


def _executor_svg(axis: _Axis, line: ExecutorLine, y: int) -> list[str]:
    """One executor's row: its label, its spans, and a cross where it ended."""
    label = f"exec {line.executor_id}"
    tip = f"executor {line.executor_id}" + (f": {line.ended}" if line.ended else "")
    svg = [f'<text x="4" y="{y + 13}" class="label"><title>{_esc(tip)}</title>{_esc(label)}</text>']
    svg += [_span_svg(axis, span, y, line.executor_id) for span in line.spans]
    if line.ended and line.spans:
        last = line.spans[-1]
        x = axis.x(last.end)
        colour = COLOURS.get(last.kind, "#6e7681")
        cross = f"M{x - 4:.1f},{y + 2} l8,{ROW - 10} m0,-{ROW - 10} l-8,{ROW - 10}"
        svg.append(
            f'<path d="{cross}" stroke="{colour}" stroke-width="2.5" class="end">'
            f"<title>{_esc(tip)}</title></path>"
        )
        svg.append(f'<text x="{x + 8:.1f}" y="{y + 13}" class="note">{_esc(line.ended)}</text>')
    return svg


def _marker_svg(axis: _Axis, marker: Marker, top: int, bottom: int) -> list[str]:
    """A dashed vertical line with a head at the bottom, for a driver's or the backend's notice."""
    x = axis.x(marker.time)
    colour = MARKER_COLOURS.get(marker.kind, MARKER_COLOURS["note"])
    tip = f"{marker.kind} at {_iso(marker.time)}: {marker.text}"
    return [
        f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="{colour}" '
        f'class="marker {marker.kind}"><title>{_esc(tip)}</title></line>',
        f'<path d="M{x - 5:.1f},{bottom} l5,-8 l5,8 z" fill="{colour}" class="marker-head">'
        f"<title>{_esc(tip)}</title></path>",
    ]


def render_html(timeline: Timeline) -> str:
    """The whole page: inline CSS and SVG, no script, no external resource."""
    axis = _Axis(timeline.start, timeline.end)
    top = 30
    rows_top = top + TARGET_HEIGHT + 30
    height = rows_top + ROW * max(len(timeline.executors), 1) + 40
    svg: list[str] = _ticks(axis, top, height - top - 30)
    svg += _target_svg(axis, timeline.target, top, timeline.end)
    for index, line in enumerate(timeline.executors):
        svg += _executor_svg(axis, line, rows_top + index * ROW)
    for marker in timeline.markers:
        svg += _marker_svg(axis, marker, top, height - 30)
    legend = "".join(
        f'<span class="key"><i style="background:{colour}"></i>{kind}</span>'
        for kind, colour in COLOURS.items()
    ) + "".join(
        f'<span class="key"><i class="line" style="background:{colour}"></i>{kind}</span>'
        for kind, colour in MARKER_COLOURS.items()
        if kind != "note"
    )
    summary = (
        f"{len(timeline.executors)} executors, {_iso(timeline.start)} to {_iso(timeline.end)} "
        f"({timeline.end - timeline.start:.1f} s)"
    )
    notes = "".join(f"<li>{_esc(note)}</li>" for note in timeline.notes)
    if notes:
        notes = f'<ul class="notes">{notes}</ul>'
    # The page itself is one template: its lines are CSS and markup, not logic.
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{_esc(timeline.title)}</title>
<style>
body {{ font: 13px system-ui, sans-serif; margin: 16px; color: #1f2328; background: #fff; }}
h1 {{ font-size: 17px; margin: 0 0 4px; }}
.summary {{ color: #57606a; margin-bottom: 8px; }}
.notes {{ color: #57606a; margin: 0 0 8px; padding-left: 18px; }}
.key {{ margin-right: 12px; white-space: nowrap; }}
.key i {{ display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -2px; }}
.key i.line {{ width: 3px; }}
svg .grid {{ stroke: #eaeef2; }}
svg .tick {{ fill: #57606a; font-size: 10px; text-anchor: middle; }}
svg .label {{ fill: #1f2328; font-size: 11px; }}
svg .note {{ fill: #57606a; font-size: 10px; }}
svg .target {{ fill: none; stroke: #0969da; stroke-width: 2; }}
svg .step {{ fill: #0969da; }}
svg .marker {{ stroke-width: 2; stroke-dasharray: 4 3; }}
svg rect.span:hover, svg .marker:hover {{ opacity: .75; }}
</style></head>
<body>
<h1>{_esc(timeline.title)}</h1>
<div class="summary">{_esc(summary)}. Hover a span or a marker for its details.</div>
{notes}<div class="legend">{legend}</div>
<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + WIDTH + 20}" height="{height}" role="img"
 aria-label="executor timeline">
{chr(10).join(svg)}
</svg>
</body></html>
"""
