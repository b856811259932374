"""``spark.kubernetes.executor.volumes.<type>.<name>.<option>`` into :class:`VolumeSpec` objects.

Same rules as Spark's ``KubernetesVolumeUtils`` and ``MountVolumesFeatureStep``: four volume types,
``mount.path`` required, type-specific required options, ``mount.subPath`` and ``mount.subPathExpr``
exclusive, sizes checked ("Missing units?"), no two volumes on one mount path. Beyond Spark, names,
sizes and claim names are checked against Kubernetes syntax here, before any pod is built.
"""

from __future__ import annotations

import difflib
import logging
from collections import Counter
from collections.abc import Mapping

from k8s_backend.conf import syntax
from k8s_backend.conf.model import VolumeSpec
from k8s_backend.conf.parse_pod import check_annotations_size, with_prefix
from k8s_backend.conf.units import parse_bool, parse_volume_size, quantity_value
from k8s_backend.errors import ConfigError

log = logging.getLogger(__name__)

VOLUMES_PREFIX = "spark.kubernetes.executor.volumes."
PVC_ON_DEMAND = "OnDemand"
EXECUTOR_ID_PLACEHOLDER = "SPARK_EXECUTOR_ID"

_MOUNT_OPTIONS = ("mount.path", "mount.subPath", "mount.subPathExpr", "mount.readOnly")
_TYPE_OPTIONS: dict[str, tuple[str, ...]] = {
    "hostPath": ("options.path", "options.type"),
    "emptyDir": ("options.medium", "options.sizeLimit"),
    "nfs": ("options.path", "options.server"),
    "persistentVolumeClaim": ("options.claimName", "options.storageClass", "options.sizeLimit"),
}
_REQUIRED: dict[str, tuple[str, ...]] = {
    "hostPath": ("options.path",),
    "emptyDir": (),
    "nfs": ("options.path", "options.server"),
    "persistentVolumeClaim": ("options.claimName",),
}
HOST_PATH_TYPES = (
    "",
    "DirectoryOrCreate",
    "Directory",
    "FileOrCreate",
    "File",
    "Socket",
    "CharDevice",
    "BlockDevice",
)
_LABEL = "label."
_ANNOTATION = "annotation."


def parse_volumes(props: Mapping[str, str], prefix: str = VOLUMES_PREFIX) -> tuple[VolumeSpec, ...]:
    """Every executor volume (the driver's with ``prefix="spark.kubernetes.driver.volumes."``), sorted by
    type then name (which fixes the on-demand claim indexes)."""
    grouped: dict[tuple[str, str], dict[str, str]] = {}
    for rest, value in with_prefix(props, prefix).items():
        parts = rest.split(".", 2)
        if len(parts) < 2:
            log.warning(
                "Spark property %s%s is ignored: volumes are set with %s<type>.<name>.<option>",
                prefix,
                rest,
                prefix,
            )
            continue
        options = grouped.setdefault((parts[0], parts[1]), {})
        if len(parts) == 3:
            options[parts[2]] = value
    volumes = tuple(_volume(kind, name, options, prefix) for (kind, name), options in sorted(grouped.items()))
    duplicated = [path for path, count in Counter(v.mount_path for v in volumes).items() if count > 1]
    if duplicated:
        listed = ", ".join(f"'{path}'" for path in sorted(duplicated))
        raise ConfigError(
            f"Found duplicated mountPath: {listed}; each {prefix}<type>.<name>.mount.path must differ",
            key=prefix,
            value=duplicated[0],
        )
    return volumes


def _volume(kind: str, name: str, options: dict[str, str], prefix: str) -> VolumeSpec:
    # Over 60 lines: Spark's checks of one volume's options, in its order, each raising the error that names
    # its key.
    base = f"{prefix}{kind}.{name}"
    if kind not in _TYPE_OPTIONS:
        raise ConfigError(
            f"{base}.*: Kubernetes Volume type `{kind}` is not supported; use one of "
            f"{', '.join(_TYPE_OPTIONS)}",
            key=base,
            value=kind,
        )
    problem = syntax.dns_label_problem(name)
    if problem is not None:
        raise ConfigError(f"{base}.*: the volume name {name!r} {problem}", key=base, value=name)
    _warn_unknown_options(base, kind, options)

    def invalid(option: str, why: str) -> ConfigError:
        return ConfigError(
            f"{base}.{option}={options[option]} is invalid: {why}",
            key=f"{base}.{option}",
            value=options[option],
        )

    if not options.get("mount.path", "").strip():
        raise ConfigError(
            f"{base}.mount.path is required for volume {kind}.{name}: set the path to mount it at",
            key=f"{base}.mount.path",
            value=options.get("mount.path"),
        )
    if "mount.subPath" in options and "mount.subPathExpr" in options:
        raise ConfigError(
            f"These config options are mutually exclusive: {base}.mount.subPath, {base}.mount.subPathExpr",
            key=f"{base}.mount.subPathExpr",
            value=options["mount.subPathExpr"],
        )
    for option in _REQUIRED[kind]:
        if not options.get(option, "").strip():
            raise ConfigError(f"{base}.{option} is required for {kind}", key=f"{base}.{option}")
    for option, problem in _path_problems(kind, options).items():
        raise invalid(option, problem)
    read_only = (
        parse_bool(options["mount.readOnly"], key=f"{base}.mount.readOnly")
        if ("mount.readOnly" in options)
        else False
    )
    host_path_type = options.get("options.type", "")
    if kind == "hostPath" and host_path_type not in HOST_PATH_TYPES:
        raise invalid(
            "options.type", f"use one of {', '.join(t for t in HOST_PATH_TYPES if t)} (or leave it unset)"
        )
    size_limit = ""
    if "options.sizeLimit" in options and kind in ("emptyDir", "persistentVolumeClaim"):
        size_limit = parse_volume_size(options["options.sizeLimit"], key=f"{base}.options.sizeLimit")
    medium = options.get("options.medium", "")
    if kind == "emptyDir" and not _is_medium(medium):
        raise invalid("options.medium", "use Memory, HugePages or HugePages-<size> (or leave it unset)")
    claim_name = options.get("options.claimName", "")
    if kind == "persistentVolumeClaim":
        sample = claim_name.replace(PVC_ON_DEMAND, "spark-exec-1-pvc-0").replace(EXECUTOR_ID_PLACEHOLDER, "1")
        problem = syntax.dns_subdomain_problem(sample)
        if problem is not None:
            raise invalid(
                "options.claimName",
                f"the claim name {problem} (OnDemand and SPARK_EXECUTOR_ID are replaced per executor)",
            )
    storage_class = options.get("options.storageClass", "") if kind == "persistentVolumeClaim" else ""
    problem = syntax.dns_subdomain_problem(storage_class) if storage_class else None
    if problem is not None:  # the claim's spec.storageClassName, a StorageClass name
        raise invalid("options.storageClass", f"the storage class name {problem}")
    labels, annotations = _claim_metadata(base, kind, options)
    return VolumeSpec(
        name=name,
        type=kind,
        mount_path=options["mount.path"],
        mount_sub_path=options.get("mount.subPath", ""),
        mount_read_only=read_only,
        path=options.get("options.path", "") if kind in ("hostPath", "nfs") else "",
        server=options.get("options.server", "") if kind == "nfs" else "",
        claim_name=claim_name,
        storage_class=storage_class,
        size_limit=size_limit,
        medium=medium if kind == "emptyDir" else "",
        mount_sub_path_expr=options.get("mount.subPathExpr", ""),
        host_path_type=host_path_type if kind == "hostPath" else "",
        labels=labels,
        annotations=annotations,
    )


def _is_medium(medium: str) -> bool:
    if medium in ("", "Memory", "HugePages"):
        return True
    size = medium.removeprefix("HugePages-")
    return size != medium and quantity_value(size) is not None


def _claim_metadata(base: str, kind: str, options: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Labels and annotations for an on-demand claim (``label.<k>``, ``annotation.<k>``)."""
    labels = {
        k[len(_LABEL) :]: v for k, v in options.items() if k.startswith(_LABEL) and len(k) > len(_LABEL)
    }
    annotations = {
        k[len(_ANNOTATION) :]: v
        for k, v in options.items()
        if k.startswith(_ANNOTATION) and len(k) > len(_ANNOTATION)
    }
    if kind != "persistentVolumeClaim":
        return {}, {}
    for name, value in labels.items():
        problem = syntax.label_key_problem(name) or syntax.label_value_problem(value)
        if problem is not None:
            raise ConfigError(
                f"{base}.{_LABEL}{name}={value} is invalid: the claim label {problem}",
                key=f"{base}.{_LABEL}{name}",
                value=value,
            )
    for name, value in annotations.items():
        problem = syntax.label_key_problem(name)
        if problem is not None:
            raise ConfigError(
                f"{base}.{_ANNOTATION}{name}={value} is invalid: the annotation key {problem}",
                key=f"{base}.{_ANNOTATION}{name}",
                value=value,
            )
    check_annotations_size(f"{base}.{_ANNOTATION}", annotations)
    return labels, annotations


def _warn_unknown_options(base: str, kind: str, options: dict[str, str]) -> None:
    known = (*_MOUNT_OPTIONS, *_TYPE_OPTIONS[kind])
    for option in options:
        if option in known:
            continue
        if kind == "persistentVolumeClaim" and option.startswith((_LABEL, _ANNOTATION)):
            continue
        close = difflib.get_close_matches(option, known, n=1)
        hint = f"; did you mean {base}.{close[0]}?" if close else f"; {kind} volumes read {', '.join(known)}"
        log.warning("Spark property %s.%s is not used by k8s_backend%s", base, option, hint)


def _descending_path_problem(path: str) -> str | None:
    """The API server's rule for subPath(Expr): a relative path that never climbs out with '..'."""
    if path.startswith("/"):
        return "must be a relative path (the API server refuses an absolute one)"
    if ".." in path.split("/"):
        return "must not contain '..' (the API server refuses a path that leaves the volume)"
    return None


def _path_problems(kind: str, options: Mapping[str, str]) -> dict[str, str]:
    """Paths a real API server would refuse, by option name (checked here, before anything is created)."""
    problems: dict[str, str] = {}
    for option in ("mount.subPath", "mount.subPathExpr"):
        problem = _descending_path_problem(options.get(option, ""))
        if problem is not None:
            problems[option] = problem
    path = options.get("options.path", "")
    if kind == "nfs" and path and not path.startswith("/"):
        problems["options.path"] = "must be an absolute path on the NFS server"
    if kind == "hostPath" and ".." in path.split("/"):
        problems["options.path"] = "must not contain '..'"
    return problems
