"""Spark's labels on Kubernetes objects, the selectors built from them, and the API server's rules for
label keys and values.

Everything that selects an application's objects (the watch and polling sources, the allocator, the
executor operations, recovery, the CLI's gc and status, the fake API) builds its selector here, from the
same constants the pod builder writes, so that a selector and the pod it should match cannot disagree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# Labels Spark puts on the objects of an application.
SPARK_APP_ID_LABEL = "spark-app-selector"
SPARK_APP_NAME_LABEL = "spark-app-name"
SPARK_VERSION_LABEL = "spark-version"
SPARK_ROLE_LABEL = "spark-role"
SPARK_EXECUTOR_ID_LABEL = "spark-exec-id"
SPARK_RESOURCE_PROFILE_ID_LABEL = "spark-exec-resourceprofile-id"
SPARK_EXECUTOR_INACTIVE_LABEL = "spark-exec-inactive"
EXECUTOR_ROLE = "executor"
DRIVER_ROLE = "driver"


def selector_from_labels(labels: Mapping[str, str]) -> str:
    """The equality selector ``k1=v1,k2=v2`` that selects objects carrying all these labels."""
    return ",".join(f"{key}={value}" for key, value in labels.items())


def app_selector(app_id: str) -> str:
    """Every object of one application (executor pods, config maps, services, PVCs, PodGroups)."""
    return selector_from_labels({SPARK_APP_ID_LABEL: app_id})


def executor_selector(
    app_id: str, *, executor_ids: Iterable[int] | None = None, active_only: bool = False
) -> str:
    """The executor pods of one application.

    ``executor_ids`` narrows it to those executors; ``active_only`` leaves out the pods the driver marked
    inactive (``spark-exec-inactive=true``), as Spark's watch and polling sources do.
    """
    selector = selector_from_labels({SPARK_APP_ID_LABEL: app_id, SPARK_ROLE_LABEL: EXECUTOR_ROLE})
    if executor_ids is not None:
        selector += f",{SPARK_EXECUTOR_ID_LABEL} in ({','.join(str(i) for i in sorted(executor_ids))})"
    if active_only:
        selector += f",{SPARK_EXECUTOR_INACTIVE_LABEL}!=true"
    return selector


def role_selector(role: str, app_id: str | None = None) -> str:
    """The pods of one role (``driver`` or ``executor``), of every application or of one."""
    labels = {SPARK_ROLE_LABEL: role}
    if app_id is not None:
        labels[SPARK_APP_ID_LABEL] = app_id
    return selector_from_labels(labels)


# --- what the API server accepts as label keys and values ------------------------------------------

_NAME_PART = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName', 'my.name' or '123-abc')"
)


def label_key_errors(key: str) -> list[str]:
    """Why ``key`` is not a valid label (or annotation) key; empty when it is valid."""
    prefix, slash, name = key.rpartition("/")
    problems: list[str] = []
    if slash and not prefix:
        problems.append("prefix part must be non-empty")
    elif prefix:
        if len(prefix) > 253:
            problems.append("prefix part must be no more than 253 characters")
        if not _DNS1123_SUBDOMAIN.match(prefix):
            problems.append(
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character"
            )
    if not name:
        problems.append("name part must be non-empty")
    else:
        if len(name) > 63:
            problems.append("name part must be no more than 63 characters")
        if not _NAME_PART.match(name):
            problems.append(f"name part {_NAME_RULE}")
    return problems


def label_value_errors(value: str) -> list[str]:
    """Why ``value`` is not a valid label value; empty when it is valid (the empty string is valid)."""
    problems: list[str] = []
    if len(value) > 63:
        problems.append("must be no more than 63 characters")
    if value and not _NAME_PART.match(value):
        problems.append(f"a valid label {_NAME_RULE}")
    return problems
