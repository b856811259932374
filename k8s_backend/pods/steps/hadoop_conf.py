"""Hadoop configuration from a ConfigMap (Spark's HadoopConfExecutorFeatureStep)."""

from __future__ import annotations

from collections.abc import Sequence

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.kube.port import Obj
from k8s_backend.pods.constants import ENV_HADOOP_CONF_DIR, HADOOP_CONF_DIR_PATH, HADOOP_CONF_VOLUME
from k8s_backend.pods.objects import add_volume_mounts, add_volumes, env_var, upsert_env, volume_mount
from k8s_backend.pods.step import SparkPod, StepContext

HADOOP_CONFIG_MAP_KEY = "spark.kubernetes.executor.hadoopConfigMapName"
USER_HADOOP_CONFIG_MAP_KEY = "spark.kubernetes.hadoop.configMapName"


class HadoopConfStep:
    """When the (internal) Hadoop ConfigMap name is set, mount it at /opt/hadoop/conf.

    Cluster mode sets the internal key; in client mode, where no driver step runs, the user's
    ``spark.kubernetes.hadoop.configMapName`` is mounted on the executors directly (Spark ignores it
    there)."""

    def __init__(self, conf: KubernetesConf) -> None:
        self._config_map = conf.get(HADOOP_CONFIG_MAP_KEY) or conf.get(USER_HADOOP_CONFIG_MAP_KEY)

    def configure_pod(self, pod: SparkPod, ctx: StepContext) -> SparkPod:
        if not self._config_map:
            return pod
        pod = pod.copy()
        add_volumes(pod.pod, [{"name": HADOOP_CONF_VOLUME, "configMap": {"name": self._config_map}}])
        add_volume_mounts(pod.container, [volume_mount(HADOOP_CONF_VOLUME, HADOOP_CONF_DIR_PATH)])
        upsert_env(pod.container, [env_var(ENV_HADOOP_CONF_DIR, HADOOP_CONF_DIR_PATH)])
        return pod

    def additional_resources(self, ctx: StepContext) -> Sequence[Obj]:
        return ()
