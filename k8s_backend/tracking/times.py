"""How k8s_backend writes an instant for people and programs alike: ISO 8601 in UTC, with milliseconds
and the ``Z`` time zone (``2026-12-02T02:17:36.250Z``). Executor histories, ``status()`` and the CLI's
JSON all use it, so a time read in one can be found in the others."""

from __future__ import annotations

from datetime import datetime, timezone


def iso_time(seconds: float) -> str:
    """``seconds`` since the epoch as ISO 8601 in UTC, to the millisecond."""
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
