"""The executor ConfigMap: the driver's SPARK_CONF_DIR files, mounted at /opt/spark/conf in executors.

Spark's rules (``KubernetesClientUtils`` and ``setUpExecutorConfigMap``): regular files of the conf dir
that are not templates, not ``spark*.conf``/``spark*.properties`` and not archives, smallest first
(name length + size), as long as the total stays under ``spark.kubernetes.configMap.maxSize``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.kube.labels import HEARTBEAT_LEASE_ANNOTATION
from k8s_backend.kube.port import Obj
from k8s_backend.pods.constants import (
    CONF_FILE_MODE,
    CONFIG_MAP_NAME_SUFFIX,
    DNS_SUBDOMAIN_MAX_LENGTH,
    EXECUTOR_ROLE,
    SPARK_APP_ID_LABEL,
    SPARK_CONF_FILE_NAME,
    SPARK_ROLE_LABEL,
)
from k8s_backend.pods.objects import owner_reference

log = logging.getLogger(__name__)

NAMESPACE_KEY = "spark.kubernetes.namespace"
MAX_SIZE_KEY = "spark.kubernetes.configMap.maxSize"
_ARCHIVE = re.compile(r".*\.(gz|zip|jar|tar)")
_TEMPLATE = re.compile(r".*\.template")
_SPARK_CONF = re.compile(r"spark.*(conf|properties)")
_CONFIG_MAP_KEY = re.compile(r"[-._a-zA-Z0-9]+")


def executor_config_map_name(unique_id: str) -> str:
    """``spark-exec-<unique id>-conf-map``, cut to fit the 253-character name limit."""
    prefix = f"spark-exec-{unique_id}"
    return prefix[: DNS_SUBDOMAIN_MAX_LENGTH - len(CONFIG_MAP_NAME_SUFFIX)] + CONFIG_MAP_NAME_SUFFIX


def default_conf_dir(conf: KubernetesConf, environ: Mapping[str, str] | None = None) -> str | None:
    """Where Spark looks for conf files: ``$SPARK_CONF_DIR``, else ``<spark.home>/conf``, else none."""
    env = os.environ if environ is None else environ
    conf_dir = env.get("SPARK_CONF_DIR")
    if conf_dir:
        return conf_dir
    spark_home = conf.get("spark.home")
    return f"{spark_home}/conf" if spark_home else None


def _eligible(name: str, size: int, max_size: int) -> bool:
    if size + len(name) > max_size or _ARCHIVE.fullmatch(name):
        return False  # too big for a ConfigMap, or binary
    if _TEMPLATE.fullmatch(name) or _SPARK_CONF.fullmatch(name):
        return False  # templates; Spark properties travel over RPC instead
    if not _CONFIG_MAP_KEY.fullmatch(name):
        log.warning("Skipping conf file %r: not a valid ConfigMap key", name)
        return False
    return True


def load_conf_dir_files(conf_dir: str | None, max_size: int) -> dict[str, str]:
    """The conf dir files that go into the executor ConfigMap, as ``{file name: content}`` sorted by name."""
    if not conf_dir or not os.path.isdir(conf_dir):
        return {}
    candidates: list[tuple[str, str, int]] = []
    for entry in os.scandir(conf_dir):
        if not entry.is_file():
            continue
        size = entry.stat().st_size
        if _eligible(entry.name, size, max_size):
            candidates.append((entry.name, entry.path, size))
    # Smallest first, so that as many files as possible fit; ties by name for a stable result.
    candidates.sort(key=lambda c: (len(c[0]) + c[2], c[0]))
    selected: dict[str, str] = {}
    skipped: list[str] = []
    total = 0
    for name, path, _ in candidates:
        try:
            with open(path, encoding="utf-8") as handle:
                content = handle.read()
        except UnicodeDecodeError:
            log.warning("Skipping conf file %s: not UTF-8 text", path)
            continue
        except OSError as exc:
            log.warning("Skipping conf file %s: %s", path, exc)
            continue
        if total + len(name) + len(content) < max_size:
            selected[name] = content
            total += len(name) + len(content)
        else:
            skipped.append(name)
    if skipped:
        log.warning(
            "Skipped conf file(s) %s of %s: they do not fit in %s=%d",
            ", ".join(skipped),
            conf_dir,
            MAX_SIZE_KEY,
            max_size,
        )
    return dict(sorted(selected.items()))


def conf_volume_items(files: Mapping[str, str]) -> list[Obj]:
    """The ``items`` of the executor conf volume: each file at its own name, mode 0644, sorted."""
    return [{"key": name, "path": name, "mode": CONF_FILE_MODE} for name in sorted(files)]


def _escape_properties(text: str, *, is_key: bool) -> str:
    out = []
    for index, char in enumerate(text):
        if char in "\\=:#!":
            out.append("\\" + char)
        elif char == " " and (is_key or index == 0):
            out.append("\\ ")
        elif char in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[char])
        else:
            out.append(char)
    return "".join(out)


def java_properties(properties: Mapping[str, str], comment: str) -> str:
    """Text in ``java.util.Properties`` format (without the date line, to stay deterministic)."""
    lines = [f"#{comment}"]
    lines += [
        f"{_escape_properties(k, is_key=True)}={_escape_properties(v, is_key=False)}"
        for k, v in properties.items()
    ]
    return "\n".join(lines) + "\n"


def build_executor_config_map(
    conf: KubernetesConf,
    *,
    app_id: str,
    name: str,
    driver_pod: Obj | None,
    conf_dir: str | None,
    heartbeat_lease: str | None = None,
) -> Obj:
    """The executor ConfigMap the backend creates at start (Spark's setUpExecutorConfigMap).

    ``heartbeat_lease``: the client-mode driver's heartbeat Lease, named in an annotation.

    Data: the selected conf dir files, a ``spark.properties`` holding the namespace, and the raw
    ``spark.kubernetes.namespace`` entry. Executor pods mount only the conf dir files (see
    :func:`conf_volume_items`).
    """
    files = load_conf_dir_files(conf_dir, conf.executor.config_map_max_size)
    resolved = {NAMESPACE_KEY: conf.namespace}
    data = dict(files)
    data[SPARK_CONF_FILE_NAME] = java_properties(
        resolved, f"Java properties built from Kubernetes config map with name: {name}"
    )
    data.update(resolved)
    metadata: Obj = {
        "name": name,
        "namespace": conf.namespace,
        "labels": {SPARK_APP_ID_LABEL: app_id, SPARK_ROLE_LABEL: EXECUTOR_ROLE},
    }
    if heartbeat_lease is not None:  # as on the executor pods: gc tells a dead driver's ConfigMap by it
        metadata["annotations"] = {HEARTBEAT_LEASE_ANNOTATION: heartbeat_lease}
    if driver_pod is not None:
        metadata["ownerReferences"] = [owner_reference(driver_pod)]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "immutable": True, "data": data}
