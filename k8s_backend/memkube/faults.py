"""Call recording and fault injection for InMemoryKubernetes.

Neither class locks: InMemoryKubernetes uses them under its own lock.
"""

from __future__ import annotations

import collections
import math
from typing import Any

import attrs

from k8s_backend.kube.port import ApiError, Resource
from k8s_backend.kube.status import reason_for
from k8s_backend.memkube.errors import api_error

VERBS = ("create", "get", "list", "watch", "patch", "delete", "delete_collection", "update")
"""The verbs calls are recorded under and faults can target ('*' targets all of them)."""



@attrs.frozen
class Call:
    """One request a client made to the fake (recorded even when it failed)."""

    verb: str
    resource_plural: str
    namespace: str | None
    name: str | None = None
    label_selector: str = ""
    field_selector: str = ""
    body: Any = None
    time: float = 0.0


def check_verb(verb: str) -> str:
    """``verb`` if it is one of :data:`VERBS` or '*', else a ValueError naming the accepted verbs."""
    if verb != "*" and verb not in VERBS:
        raise ValueError(f"unknown verb {verb!r}: use one of {', '.join(VERBS)} or '*'")
    return verb


@attrs.define
class _Fault:
    verb: str
    resource: tuple[str, str] | None
    status: int
    remaining: int | None  # None: every matching call until ``until``
    retry_after: float | None
    message: str
    until: float | None = None

    def applies_to(self, verb: str, resource: Resource) -> bool:
        return (self.verb in ("*", verb)) and (
            self.resource is None or self.resource == (resource.group, resource.plural)
        )


@attrs.define
class _RateLimit:
    """At most ``per_second`` accepted calls in any window of one second (a sliding window)."""

    verb: str
    resource: tuple[str, str] | None
    per_second: float
    retry_after: float | None
    accepted: collections.deque[float] = attrs.field(factory=collections.deque)
    refused: int = 0

    def applies_to(self, verb: str, resource: Resource) -> bool:
        return (self.verb in ("*", verb)) and (
            self.resource is None or self.resource == (resource.group, resource.plural)
        )

    def admit(self, now: float) -> float | None:
        """None if the call is accepted now, else the seconds until one would be."""
        while self.accepted and self.accepted[0] <= now - 1.0:
            self.accepted.popleft()
        if len(self.accepted) < self.per_second:
            self.accepted.append(now)
            return None
        self.refused += 1
        return max(self.accepted[0] + 1.0 - now, 0.001)


class FaultInjector:
    """Errors, latency and rate limits to inject into the matching calls."""

    def __init__(self) -> None:
        self._faults: list[_Fault] = []
        self._latency: dict[str, float] = {}
        self._limits: list[_RateLimit] = []

    def limit_rate(
        self, per_second: float, verb: str, resource: Resource | None, *, retry_after: float | None
    ) -> None:
        if per_second < 0:
            raise ValueError(f"a rate limit is 0 (off) or a positive number of calls a second: {per_second}")
        key = None if resource is None else (resource.group, resource.plural)
        self._limits = [x for x in self._limits if (x.verb, x.resource) != (check_verb(verb), key)]
        if per_second > 0:
            self._limits.append(_RateLimit(check_verb(verb), key, per_second, retry_after))

    def refused_by_rate_limit(self) -> int:
        """How many calls the rate limits answered 429 so far."""
        return sum(x.refused for x in self._limits)

    def fail_next(
        self,
        verb: str,
        resource: Resource | None,
        *,
        status: int,
        count: int,
        retry_after: float | None,
        message: str,
    ) -> None:
        if count < 1:
            raise ValueError(f"count must be at least 1 (got {count})")
        self._add(verb, resource, status, count, retry_after, message, None)

    def fail_until(
        self,
        until: float,
        verb: str,
        resource: Resource | None,
        *,
        status: int,
        retry_after: float | None,
        message: str,
    ) -> None:
        """Answer every matching call with ``status`` until the clock reaches ``until`` (an outage)."""
        self._add(verb, resource, status, None, retry_after, message, until)

    def _add(
        self,
        verb: str,
        resource: Resource | None,
        status: int,
        count: int | None,
        retry_after: float | None,
        message: str,
        until: float | None,
    ) -> None:
        if not 400 <= status <= 599:
            raise ValueError(f"status must be an HTTP error status 400-599 (got {status})")
        key = None if resource is None else (resource.group, resource.plural)
        self._faults.append(_Fault(check_verb(verb), key, status, count, retry_after, message, until))

    def add_latency(self, seconds: float, verb: str) -> None:
        if seconds < 0:
            raise ValueError(f"latency must be >= 0 seconds (got {seconds})")
        if seconds == 0:
            self._latency.pop(check_verb(verb), None)
        else:
            self._latency[check_verb(verb)] = seconds

    def latency(self, verb: str) -> float:
        return self._latency.get(verb, self._latency.get("*", 0.0))

    def take_fault(self, verb: str, resource: Resource, now: float) -> ApiError | None:
        """The error for this call if a fault is armed for it (consuming one of its count), else the
        429 of a rate limit it exceeds."""
        self._faults = [f for f in self._faults if f.until is None or now < f.until]
        for fault in self._faults:
            if fault.applies_to(verb, resource):
                if fault.remaining is not None:
                    fault.remaining -= 1
                    if fault.remaining == 0:
                        self._faults.remove(fault)
                return api_error(
                    fault.status,
                    reason_for(fault.status),
                    fault.message,
                    retry_after=fault.retry_after,
                )
        for limit in self._limits:
            if limit.applies_to(verb, resource):
                wait = limit.admit(now)
                if wait is not None:
                    retry_after = limit.retry_after if limit.retry_after is not None else math.ceil(wait)
                    message = f"too many requests: at most {limit.per_second:g} {verb} calls per second"
                    return api_error(429, reason_for(429), message, retry_after=retry_after)
        return None

    def clear(self) -> None:
        self._faults.clear()
        self._latency.clear()
        self._limits.clear()
