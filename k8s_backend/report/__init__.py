"""Reports a person reads: the executor timeline (:mod:`~k8s_backend.report.timeline`)."""

from k8s_backend.report.builders import Move, TimelineLog, from_histories, from_pods
from k8s_backend.report.timeline import ExecutorLine, Marker, Span, Timeline, render_html

__all__ = [
    "ExecutorLine",
    "Marker",
    "Move",
    "Span",
    "Timeline",
    "TimelineLog",
    "from_histories",
    "from_pods",
    "render_html",
]
