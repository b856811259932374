"""Quota-aware allocation: cap a round's requests at what the namespace's ResourceQuotas still allow.

:func:`cap_requests` is pure: the round's requests, each profile's per-pod demand and the quotas (their
``status.hard`` and ``status.used``) in, the capped requests and the quota that holds allocation back
out. :class:`QuotaGate` reads the quotas (and the LimitRanges' container defaults, which fill a limit the
executor pod does not set) from a watch-backed view (:mod:`k8s_backend.allocation.quota_watch`): a
list or two at the first round that wants pods, then no request per round. It logs once that allocation waits
(naming the quota and the resource) and once that it resumes, and degrades to no cap, with one warning,
when it may not list.

The view can be behind the API server: the quota admission raises ``status.used`` as it admits a pod,
and the watch brings that a moment later. So the pods this gate let through count against the quotas
until the view's resourceVersion reaches theirs (:func:`still_unseen`, :func:`with_unseen`), and a create
refused over quota anyway (403 "exceeded quota": another client took the room) has the quotas listed
again before the next round: the API server's admission is the judge, the view only its forecast.

Quotas with scopes (``scopes``, ``scopeSelector``) are skipped: whether they apply depends on the pod's
priority class, termination and QoS, which this does not model; the API server still enforces them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import attrs

from k8s_backend.allocation.creator import Creation
from k8s_backend.allocation.policy import RequestExecutors
from k8s_backend.allocation.quota_watch import QuotaWatch
from k8s_backend.conf.model import ResourceProfile
from k8s_backend.kube.port import ForbiddenError, NotFoundError, Obj, UnauthorizedError
from k8s_backend.kube.quantity import parse_quantity

log = logging.getLogger(__name__)


@attrs.frozen
class QuotaView:
    """One ResourceQuota: its name and, per resource name, what it allows and what is used."""

    name: str
    hard: Mapping[str, Decimal]
    used: Mapping[str, Decimal]

    @classmethod
    def of(cls, quota: Obj) -> QuotaView | None:
        """The view of a ResourceQuota object; None for a scoped quota (not modelled) or no status yet."""
        spec = quota.get("spec") or {}
        if spec.get("scopes") or spec.get("scopeSelector"):
            return None
        status = quota.get("status") or {}
        hard, used = status.get("hard") or spec.get("hard") or {}, status.get("used") or {}
        name = str((quota.get("metadata") or {}).get("name", ""))
        return cls(name, _quantities(hard), _quantities(used))


def _quantities(values: Mapping[str, Any]) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for key, value in values.items():
        try:
            out[str(key)] = parse_quantity(value, field=str(key))
        except Exception:  # nosec B112
            continue  # a quantity we cannot read caps nothing; the API server still enforces it
    return out


@attrs.frozen
class PodDemand:
    """What one executor pod of a profile counts against quotas (cpu in cores, memory in bytes)."""

    cpu_request: Decimal
    memory_request: Decimal
    cpu_limit: Decimal | None
    memory_limit: Decimal | None

    def amounts(self) -> dict[str, Decimal]:
        out = {
            "pods": Decimal(1),
            "count/pods": Decimal(1),
            "cpu": self.cpu_request,
            "requests.cpu": self.cpu_request,
            "memory": self.memory_request,
            "requests.memory": self.memory_request,
        }
        if self.cpu_limit is not None:
            out["limits.cpu"] = self.cpu_limit
        if self.memory_limit is not None:
            out["limits.memory"] = self.memory_limit
        return out


@attrs.frozen
class QuotaBlock:
    """The quota and resource that hold allocation back (for the one log line and status())."""

    quota: str
    resource: str
    hard: Decimal
    used: Decimal
    per_pod: Decimal
    waiting: int
    unseen: Decimal = Decimal(0)  # of ``used``: pods created here that the quota's status has not shown yet

    def describe(self) -> str:
        seen = self.used - self.unseen
        since = f" (+{_text(self.unseen)} by pods created since its status)" if self.unseen > 0 else ""
        return (
            f"ResourceQuota {self.quota}: {self.resource} hard {_text(self.hard)}, "
            f"used {_text(seen)}{since}, an executor pod needs {_text(self.per_pod)}"
        )


def _text(value: Decimal) -> str:
    return format(value.normalize(), "f")


@attrs.frozen
class QuotaDecision:
    requests: tuple[RequestExecutors, ...]
    block: QuotaBlock | None


def cap_requests(
    requests: Sequence[RequestExecutors],
    demand: Mapping[int, PodDemand],
    quotas: Sequence[QuotaView],
) -> QuotaDecision:
    """Cap ``requests`` (in order; earlier profiles use the room first) at what every quota still fits.

    ``block``: the first quota and resource that cut a request, with how many pods wait.
    """
    used = {q.name: dict(q.used) for q in quotas}
    capped: list[RequestExecutors] = []
    block: QuotaBlock | None = None
    for request in requests:
        per_pod = demand[request.rp_id].amounts()
        count, cut = request.count, None
        for quota in quotas:
            for resource, hard in quota.hard.items():
                need = per_pod.get(resource)
                if need is None or need <= 0:
                    continue
                room = int((hard - used[quota.name].get(resource, Decimal(0))) // need)
                if room < count:
                    count = max(room, 0)
                    cut = (quota, resource, hard, need)
        if cut is not None and block is None:
            quota, resource, hard, need = cut
            block = QuotaBlock(
                quota.name, resource, hard, quota.used.get(resource, Decimal(0)), need, request.count - count
            )
        for quota in quotas:  # the pods of this request use room the next request cannot have
            for resource in quota.hard:
                if resource in per_pod:
                    used[quota.name][resource] = (
                        used[quota.name].get(resource, Decimal(0)) + per_pod[resource] * count
                    )
        if count > 0:
            capped.append(attrs.evolve(request, count=count))
    return QuotaDecision(tuple(capped), block)


def container_defaults(limit_ranges: Sequence[Obj]) -> dict[str, Decimal]:
    """The LimitRanges' default container limits (``cpu``, ``memory``), which fill a limit a pod lacks."""
    defaults: dict[str, Decimal] = {}
    for item in limit_ranges:
        for limit in (item.get("spec") or {}).get("limits") or []:
            if isinstance(limit, dict) and limit.get("type") == "Container":
                defaults.update(_quantities(limit.get("default") or {}))
    return defaults


@attrs.frozen
class UnseenCreate:
    """Pods this backend created that the quota view may not count yet: the API server's quota admission
    raised ``status.used`` before it stored the pod, so a view at the pod's resourceVersion (or newer)
    counts it. ``listed_at``: the view's version when recorded, for a pod of unknown version (then the
    view's next version is taken to count it)."""

    version: int | None
    listed_at: int | None
    count: int
    demand: PodDemand


def still_unseen(creates: Sequence[UnseenCreate], view_version: int | None) -> list[UnseenCreate]:
    """The creates a view at ``view_version`` does not count yet (all of them when it is unknown)."""
    if view_version is None:
        return list(creates)
    return [
        c
        for c in creates
        if (c.version > view_version if c.version is not None else c.listed_at == view_version)
    ]


def with_unseen(quotas: Sequence[QuotaView], creates: Sequence[UnseenCreate]) -> list[QuotaView]:
    """The quotas with the unseen creates' demand added to ``used``, as the next view will have it."""
    if not creates:
        return list(quotas)
    extra: dict[str, Decimal] = {}
    for create in creates:
        for resource, amount in create.demand.amounts().items():
            extra[resource] = extra.get(resource, Decimal(0)) + amount * create.count
    return [
        attrs.evolve(
            q, used={r: q.used.get(r, Decimal(0)) + extra.get(r, Decimal(0)) for r in {*q.used, *q.hard}}
        )
        for q in quotas
    ]


def refused_over_quota(creation: Creation) -> bool:
    """Whether the API server's quota admission refused a create (403 "exceeded quota")."""
    return creation.status == 403 and "exceeded quota" in creation.error


class QuotaGate:
    """Caps a round at what the namespace's quotas allow, read from a watch-backed view (see the module
    doc): the first round that wants pods lists the quotas and LimitRanges, later rounds send nothing."""

    def __init__(
        self,
        view: QuotaWatch,
        demand_of: Callable[[ResourceProfile], PodDemand],
    ) -> None:
        self._view = view
        self._demand_of = demand_of
        self.forbidden: str | None = None
        self.unserved = False  # the API server serves no ResourceQuotas (the embedded one): no cap
        self.block: QuotaBlock | None = None
        self._demand: dict[int, PodDemand] = {}  # of the last round's requests, LimitRange defaults in
        self._unseen: list[UnseenCreate] = []
        self._stale = False  # a create was refused over quota: list again before the next round
        self.refreshes = 0

    def cap(
        self, requests: Sequence[RequestExecutors], profiles: Mapping[int, ResourceProfile]
    ) -> tuple[RequestExecutors, ...]:
        """The requests that fit the quotas (the first call lists, later ones read the watched view)."""
        if not requests or self.forbidden is not None or self.unserved:
            return tuple(requests)
        if not self._read_view():
            return tuple(requests)
        views = [v for v in (QuotaView.of(q) for q in self._view.quotas.objects()) if v is not None]
        self._unseen = still_unseen(self._unseen, self._view.quotas.version) if views else []
        if not views:
            self._demand = {}
            self._resume()
            return tuple(requests)
        if not self._read_view(limit_ranges=True):
            return tuple(requests)
        defaults = container_defaults(self._view.limit_ranges.objects())
        self._demand = {
            r.rp_id: _with_defaults(self._demand_of(profiles[r.rp_id]), defaults) for r in requests
        }
        decision = cap_requests(requests, self._demand, with_unseen(views, self._unseen))
        block = decision.block
        if block is not None and self._unseen:  # say how much of "used" the quota's status does not show yet
            watched = next(v for v in views if v.name == block.quota).used.get(block.resource, Decimal(0))
            block = attrs.evolve(block, unseen=block.used - watched)
        self._report(block)
        return decision.requests

    def _read_view(self, *, limit_ranges: bool = False) -> bool:
        """Start (or refresh) the view; False: it cannot be read, so this round is not capped."""
        try:
            if limit_ranges:
                self._view.ensure_limit_ranges()
            else:
                self._view.ensure_started()
            if self._stale and not limit_ranges:
                self._view.refresh()
                self._stale = False
                self.refreshes += 1
        except (ForbiddenError, UnauthorizedError) as error:
            self.forbidden = str(error)
            self._view.stop()
            log.warning(
                "Cannot read the namespace's ResourceQuotas (%s): allocation is not capped at what quotas "
                "allow, and creates over quota are refused by the API server. To fix: grant the driver "
                "list and watch on resourcequotas and limitranges, or set "
                "spark.kubernetes.allocation.quotaAware=false.",
                error,
            )
            return False
        except NotFoundError:
            # No ResourceQuota kind on this server (k8s_backend's embedded one): no quota can refuse a pod.
            self.unserved = True
            self._view.stop()
            log.info("The API server serves no ResourceQuotas: allocation is not capped by quota")
            return False
        except Exception as error:
            log.warning("Listing ResourceQuotas failed (%s); this round is not capped", error)
            return False
        return True

    def created(self, rp_id: int, creations: Sequence[Creation]) -> None:
        """What became of a request's creates: the pods the view does not count yet, and whether the API
        server refused one over quota (then the view is listed again before the next round)."""
        demand = self._demand.get(rp_id)
        listed_at = self._view.quotas.version
        for creation in creations:
            if creation.created and demand is not None:
                self._unseen.append(UnseenCreate(creation.resource_version, listed_at, 1, demand))
            elif refused_over_quota(creation) and not self._stale:
                self._stale = True
                log.info("A create was refused over quota (%s): the quotas are listed again", creation.error)

    def _report(self, block: QuotaBlock | None) -> None:
        if block is None:
            self._resume()
        elif self.block is None or (self.block.quota, self.block.resource) != (block.quota, block.resource):
            log.warning(
                "Allocation waits for quota: %s; %d executor pod(s) wait until the quota frees.",
                block.describe(),
                block.waiting,
            )
        self.block = block

    def _resume(self) -> None:
        if self.block is not None:
            log.info("Quota %s has room again: allocation resumes", self.block.quota)
            self.block = None

    def stop(self) -> None:
        """Stop watching (at the backend's stop)."""
        self._view.stop()

    @property
    def view(self) -> QuotaWatch:
        return self._view

    @property
    def lists(self) -> int:
        return self._view.lists

    def status(self) -> dict[str, Any]:
        return {
            "waiting_for": None if self.block is None else self.block.describe(),
            "forbidden": self.forbidden,
            "unseen_creates": len(self._unseen),
            "refreshes": self.refreshes,
            **self._view.status(),
        }


def _with_defaults(demand: PodDemand, defaults: Mapping[str, Decimal]) -> PodDemand:
    return attrs.evolve(
        demand,
        cpu_limit=demand.cpu_limit if demand.cpu_limit is not None else defaults.get("cpu"),
        memory_limit=demand.memory_limit if demand.memory_limit is not None else defaults.get("memory"),
    )


def demand_from(memory_mib: int, cpu_request: str, cpu_limit: str | None) -> PodDemand:
    """An executor pod's demand: its memory is both request and limit, as the pod builder sets it."""
    memory = Decimal(memory_mib) * 1024 * 1024
    return PodDemand(
        cpu_request=parse_quantity(cpu_request, field="cpu request"),
        memory_request=memory,
        cpu_limit=None if cpu_limit is None else parse_quantity(cpu_limit, field="cpu limit"),
        memory_limit=memory,
    )
