"""Spark's labels on Kubernetes objects, the selectors built from them, and the API server's rules for
label keys and values.

Everything that selects an application's objects (the watch and polling sources, the allocator, the
executor operations, recovery, the CLI's gc and status, the fake API) builds its selector here, from the
same constants the pod builder writes, so that a selector and the pod it should match cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from k8s_backend.kube.names import (
    EMPTY_ERROR,
    LABEL_VALUE_ERROR,
    LABEL_VALUE_MAX_LENGTH,
    LABEL_VALUE_PATTERN,
    QUALIFIED_NAME_ERROR,
    QUALIFIED_NAME_MAX_LENGTH,
    QUALIFIED_NAME_PATTERN,
    dns1123_subdomain_errors,
    full_match,
    max_len_error,
    regex_error,
)

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

# On executor pods and the executor ConfigMap of a client-mode application: the name of the Lease its
# driver renews (k8s_backend.backend.heartbeat), so that `k8s-backend gc` can tell a dead driver's leftovers.
HEARTBEAT_LEASE_ANNOTATION = "k8s-backend.io/heartbeat-lease"


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
# The rules are apimachinery's IsQualifiedName and IsValidLabelValue, built from the patterns and
# phrases of kube/names.py (the prefix of a key is a DNS-1123 subdomain).


def label_key_errors(key: str) -> list[str]:
    """Why ``key`` is not a valid label (or annotation) key, in the server's words; empty when valid."""
    parts = key.split("/")
    if len(parts) > 2:
        return [
            "a qualified name "
            + regex_error(QUALIFIED_NAME_ERROR, QUALIFIED_NAME_PATTERN, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    problems: list[str] = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append(f"prefix part {EMPTY_ERROR}")
        else:
            problems += [f"prefix part {problem}" for problem in dns1123_subdomain_errors(prefix)]
    name = parts[-1]
    if not name:
        problems.append(f"name part {EMPTY_ERROR}")
    elif len(name) > QUALIFIED_NAME_MAX_LENGTH:
        problems.append(f"name part {max_len_error(QUALIFIED_NAME_MAX_LENGTH)}")
    if not full_match(QUALIFIED_NAME_PATTERN, name):
        problems.append(
            "name part "
            + regex_error(QUALIFIED_NAME_ERROR, QUALIFIED_NAME_PATTERN, "MyName", "my.name", "123-abc")
        )
    return problems


def label_value_errors(value: str) -> list[str]:
    """Why ``value`` is not a valid label value, in the server's words; empty when valid (so is '')."""
    problems: list[str] = []
    if len(value) > LABEL_VALUE_MAX_LENGTH:
        problems.append(max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not full_match(LABEL_VALUE_PATTERN, value):
        problems.append(regex_error(LABEL_VALUE_ERROR, LABEL_VALUE_PATTERN, "MyValue", "my_value", "12345"))
    return problems


# apimachinery's TotalAnnotationSizeLimitB: the keys and values of one object's annotations, in bytes.
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024


def annotations_size(annotations: Mapping[str, str]) -> int:
    """The size the API server counts for an object's annotations: every key and value, UTF-8 bytes."""
    return sum(len(key.encode()) + len(value.encode()) for key, value in annotations.items())


def annotations_size_errors(annotations: Mapping[str, str]) -> list[str]:
    """Why these annotations are too big for one object, in the server's words; empty when they fit."""
    if annotations_size(annotations) <= TOTAL_ANNOTATION_SIZE_LIMIT:
        return []
    return [f"may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes"]


# --- container resource names (requests and limits) ------------------------------------------------
# pkg/apis/core/helper IsExtendedResourceName: a name with a '/' outside *kubernetes.io/ is an extended
# resource, which must not start with "requests." and must stay a qualified name once "requests." is
# put before it (the name its quota takes).

RESOURCE_REQUESTS_PREFIX = "requests."
NATIVE_RESOURCE_DOMAIN = "kubernetes.io/"
EXTENDED_RESOURCE_ERROR = "doesn't follow extended resource name standard"


def extended_resource_name_errors(name: str) -> list[str]:
    """Why ``name`` (``<domain>/<name>``, e.g. ``nvidia.com/gpu``) is refused as a container resource;
    empty when the API server accepts it (native ``*kubernetes.io/`` names included)."""
    problems = label_key_errors(name)
    if problems:
        return problems
    if "/" not in name or NATIVE_RESOURCE_DOMAIN in name:
        return []
    if name.startswith(RESOURCE_REQUESTS_PREFIX) or label_key_errors(RESOURCE_REQUESTS_PREFIX + name):
        return [EXTENDED_RESOURCE_ERROR]
    return []

# On a cluster-mode application's executors: the name of their driver pod (``k8s-backend gc`` reads it).
DRIVER_POD_ANNOTATION = "k8s-backend.io/driver-pod"
