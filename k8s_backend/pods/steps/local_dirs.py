"""Spark local (scratch) directories (Spark's LocalDirsFeatureStep).

If the container already mounts volumes named ``spark-local-dir-*`` (from the template or user
volumes), their paths are the local dirs. Otherwise each configured dir (``spark.local.dir``, else a
generated ``/var/data/spark-<uuid>``) is mounted from volume ``spark-local-dir-<n>``: the template's
volume of that name if there is one, else a new emptyDir (in memory when
``spark.kubernetes.local.dirs.tmpfs`` is set). ``SPARK_LOCAL_DIRS`` always lists them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.kube.port import Obj
from k8s_backend.pods.constants import DEFAULT_LOCAL_DIR_PARENT, ENV_LOCAL_DIRS, LOCAL_DIR_VOLUME_PREFIX
from k8s_backend.pods.objects import add_volume_mounts, add_volumes, env_var, upsert_env, volume_mount
from k8s_backend.pods.step import SparkPod, StepContext


def generated_local_dir() -> str:
    """A fresh default local dir, ``/var/data/spark-<uuid>``."""
    return f"{DEFAULT_LOCAL_DIR_PARENT}/spark-{uuid.uuid4()}"


class LocalDirsStep:
    """Back the executor's local dirs with emptyDir volumes unless the pod already provides them."""

    def __init__(
        self, conf: KubernetesConf, default_local_dir: Callable[[], str] = generated_local_dir
    ) -> None:
        self._configured = tuple(d for d in conf.executor.local_dirs if d)
        self._tmpfs = conf.executor.local_dirs_tmpfs
        self._default_local_dir = default_local_dir

    def configure_pod(self, pod: SparkPod, ctx: StepContext) -> SparkPod:
        return with_local_dirs(
            pod, self._configured, tmpfs=self._tmpfs, default_local_dir=self._default_local_dir
        )

    def additional_resources(self, ctx: StepContext) -> Sequence[Obj]:
        return ()


def with_local_dirs(
    pod: SparkPod, configured: Sequence[str], *, tmpfs: bool, default_local_dir: Callable[[], str]
) -> SparkPod:
    """The pod with its local dirs backed and listed in ``SPARK_LOCAL_DIRS`` (the driver's step too)."""
    pod = pod.copy()
    mounted = [
        m["mountPath"]
        for m in pod.container.get("volumeMounts") or []
        if str(m.get("name", "")).startswith(LOCAL_DIR_VOLUME_PREFIX) and m.get("mountPath")
    ]
    local_dirs = mounted
    if not mounted:
        local_dirs = list(configured) or [default_local_dir()]
        names = [f"{LOCAL_DIR_VOLUME_PREFIX}{i + 1}" for i in range(len(local_dirs))]
        empty_dir: Obj = {"medium": "Memory"} if tmpfs else {}
        # A template volume of the same name backs the dir instead of an emptyDir.
        existing = {v.get("name") for v in (pod.pod.get("spec") or {}).get("volumes") or []}
        add_volumes(pod.pod, [{"name": n, "emptyDir": dict(empty_dir)} for n in names if n not in existing])
        mounts = [volume_mount(n, d) for n, d in zip(names, local_dirs, strict=True)]
        add_volume_mounts(pod.container, mounts)
    upsert_env(pod.container, [env_var(ENV_LOCAL_DIRS, ",".join(local_dirs))])
    return pod
