"""The keys table: every Spark property k8s_backend knows, in one declarative place.

Each row (:class:`~k8s_backend.conf.spec.Key`) gives the key's name, kind, default (as Spark writes it),
meaning, check and the :class:`~k8s_backend.conf.model.KubernetesConf` field it fills. The rows are
grouped by concern in the ``keys_*`` modules; this module gathers them into :data:`SECTIONS` (which the
configuration reference, docs/configuration.md, is rendered from: see :mod:`k8s_backend.conf.docs`) and
answers look-ups.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from types import MappingProxyType

import attrs

from k8s_backend.conf.keys_backend import (
    ALLOCATION_KEYS,
    LIFECYCLE_KEYS,
    METRICS_KEYS,
    SCALING_KEYS,
    SNAPSHOT_KEYS,
)
from k8s_backend.conf.keys_driver import API_KEYS, APP_KEYS, AUTH_KEYS, DRIVER_KEYS
from k8s_backend.conf.keys_executor import IMAGE_KEYS, MISC_KEYS, POD_KEYS
from k8s_backend.conf.keys_gang import EXECUTOR_TRACKING_KEYS, GANG_KEYS
from k8s_backend.conf.keys_passthrough import (
    DRIVER_POD_KEYS,
    PROJECT_KEYS,
    SUBMISSION_KEYS,
    UNSUPPORTED_KEYS,
)
from k8s_backend.conf.keys_resources import RESOURCE_KEYS
from k8s_backend.conf.keys_roll import ROLL_KEYS
from k8s_backend.conf.spec import Key, Kind, Use

__all__ = [
    "KEYS",
    "KEYS_BY_NAME",
    "SECTIONS",
    "WATCHED_PREFIX",
    "Key",
    "Kind",
    "Section",
    "Use",
    "family_of",
    "is_known",
    "key",
    "suggest",
    "unknown_keys",
]

# Unknown keys under this prefix get a warning (other Spark keys are none of our business).
WATCHED_PREFIX = "spark.kubernetes."


@attrs.frozen
class Section:
    """A titled group of keys (one table of docs/configuration.md)."""

    title: str
    keys: tuple[Key, ...]


SECTIONS: tuple[Section, ...] = (
    Section("Application", APP_KEYS),
    Section("Executor image", IMAGE_KEYS),
    Section("Executor pods", POD_KEYS + MISC_KEYS),
    Section("Executor resources", RESOURCE_KEYS),
    Section("Allocation", ALLOCATION_KEYS),
    Section("Pod snapshots", SNAPSHOT_KEYS),
    Section("Executor lifecycle", LIFECYCLE_KEYS),
    Section("Executor rolling (Spark's ExecutorRollPlugin)", ROLL_KEYS),
    Section("Executor count", SCALING_KEYS),
    Section("Driver", DRIVER_KEYS),
    Section("Kubernetes API client", API_KEYS + AUTH_KEYS),
    Section("Stuck executors, stop and recovery after a restart", EXECUTOR_TRACKING_KEYS),
    Section("Prometheus metrics", METRICS_KEYS),
    Section("Gang scheduling (YuniKorn, Volcano, built-in)", GANG_KEYS + PROJECT_KEYS),
    Section("Passed through: driver pod and submission", DRIVER_POD_KEYS + SUBMISSION_KEYS),
    Section("Passed through: Spark features k8s_backend does not provide", UNSUPPORTED_KEYS),
)

KEYS: tuple[Key, ...] = tuple(k for section in SECTIONS for k in section.keys)

KEYS_BY_NAME: Mapping[str, Key] = MappingProxyType({k.name: k for k in KEYS if not k.is_prefix})

_FAMILIES: tuple[Key, ...] = tuple(sorted((k for k in KEYS if k.is_prefix), key=lambda k: -len(k.prefix)))


def key(name: str) -> Key:
    """The row of a single key (not a family); KeyError if unknown."""
    return KEYS_BY_NAME[name]


def family_of(name: str) -> Key | None:
    """The family row (``...label.<name>``) ``name`` belongs to, the most specific one, or None."""
    for family in _FAMILIES:
        if name.startswith(family.prefix) and len(name) > len(family.prefix):
            return family
    return None


def is_known(name: str) -> bool:
    return name in KEYS_BY_NAME or family_of(name) is not None


def suggest(name: str) -> str | None:
    """The known key (or family) closest to ``name``, for "did you mean" hints."""
    best, best_score = None, _CUTOFF
    for known in KEYS_BY_NAME:
        score = _similarity(name, known)
        if score >= best_score:
            best, best_score = known, score
    # A family is compared on its prefix only: "...executor.labels.team" is scored as
    # "...executor.labels." against "...executor.label.".
    parts = name.split(".")
    for family in _FAMILIES:
        depth = family.prefix.count(".")
        if len(parts) > depth:
            score = _similarity(".".join(parts[:depth]) + ".", family.prefix)
            if score >= best_score:
                best, best_score = family.name, score
    return best


_CUTOFF = 0.8


def _similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


def unknown_keys(names: Iterable[str]) -> list[str]:
    """The ``spark.kubernetes.*`` keys among ``names`` that no row describes, sorted."""
    return sorted(n for n in names if n.startswith(WATCHED_PREFIX) and not is_known(n))
