"""Hadoop configuration for the driver and its executors (Spark's HadoopConfDriverFeatureStep).

``spark.kubernetes.hadoop.configMapName`` names an existing ConfigMap; otherwise, in cluster mode, the
files of ``$HADOOP_CONF_DIR`` on the submitting machine become a ConfigMap ``<prefix>-hadoop-config``
created with the driver and owned by it. Either way the ConfigMap is mounted at ``/opt/hadoop/conf`` in
the driver (``HADOOP_CONF_DIR`` pointing there), and ``spark.kubernetes.executor.hadoopConfigMapName``
tells the executor step (:class:`~k8s_backend.pods.steps.hadoop_conf.HadoopConfStep`) to mount it too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import Obj
from k8s_backend.pods.constants import ENV_HADOOP_CONF_DIR, HADOOP_CONF_DIR_PATH, HADOOP_CONF_VOLUME
from k8s_backend.pods.driver.step import DriverContext
from k8s_backend.pods.objects import add_volume_mounts, add_volumes, env_var, upsert_env, volume_mount
from k8s_backend.pods.step import SparkPod

HADOOP_CONFIG_MAP_KEY = "spark.kubernetes.hadoop.configMapName"
EXECUTOR_HADOOP_CONFIG_MAP_KEY = "spark.kubernetes.executor.hadoopConfigMapName"
# A ConfigMap's data is limited to 1 MiB by the API server; leave room for the object's metadata.
MAX_DATA_BYTES = 1_000_000


def read_hadoop_conf_dir(conf_dir: str) -> dict[str, str]:
    """The regular files directly in ``conf_dir`` (as Spark lists them), by name; a :class:`ConfigError`
    naming ``HADOOP_CONF_DIR`` when the directory is missing, a file is not text, or they are too big."""
    path = Path(conf_dir)
    if not path.is_dir():
        raise ConfigError(
            f"{ENV_HADOOP_CONF_DIR}={conf_dir} is not a directory: fix it or unset it (or name an existing "
            f"ConfigMap with {HADOOP_CONFIG_MAP_KEY})",
            key=ENV_HADOOP_CONF_DIR,
            value=conf_dir,
        )
    data: dict[str, str] = {}
    for file in sorted(p for p in path.iterdir() if p.is_file()):
        try:
            data[file.name] = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(
                f"{ENV_HADOOP_CONF_DIR}={conf_dir}: cannot ship {file.name} in the Hadoop ConfigMap "
                f"({error}); "
                f"remove it from the directory or name an existing ConfigMap with {HADOOP_CONFIG_MAP_KEY}",
                key=ENV_HADOOP_CONF_DIR,
                value=conf_dir,
            ) from None
    size = sum(len(k) + len(v.encode()) for k, v in data.items())
    if size > MAX_DATA_BYTES:
        raise ConfigError(
            f"{ENV_HADOOP_CONF_DIR}={conf_dir} holds {size} bytes, more than a ConfigMap takes "
            f"({MAX_DATA_BYTES}); create the ConfigMap yourself and name it with {HADOOP_CONFIG_MAP_KEY}",
            key=ENV_HADOOP_CONF_DIR,
            value=conf_dir,
        )
    return data


def hadoop_config_map(name: str, namespace: str, labels: Mapping[str, str], data: Mapping[str, str]) -> Obj:
    """The ConfigMap of ``$HADOOP_CONF_DIR``'s files (owner reference added when the driver exists)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "immutable": True,
        "data": dict(data),
    }


class DriverHadoopConfStep:
    """Mount the Hadoop ConfigMap the executors get (``spark.kubernetes.executor.hadoopConfigMapName``,
    set by cluster mode from the key or the directory) at /opt/hadoop/conf in the driver."""

    def __init__(self, properties: Mapping[str, str]) -> None:
        self._config_map = properties.get(EXECUTOR_HADOOP_CONFIG_MAP_KEY)

    def configure_pod(self, pod: SparkPod, ctx: DriverContext) -> SparkPod:
        if not self._config_map:
            return pod
        pod = pod.copy()
        add_volumes(pod.pod, [{"name": HADOOP_CONF_VOLUME, "configMap": {"name": self._config_map}}])
        add_volume_mounts(pod.container, [volume_mount(HADOOP_CONF_VOLUME, HADOOP_CONF_DIR_PATH)])
        upsert_env(pod.container, [env_var(ENV_HADOOP_CONF_DIR, HADOOP_CONF_DIR_PATH)])
        return pod

    def additional_resources(self, ctx: DriverContext) -> Sequence[Obj]:
        return ()
