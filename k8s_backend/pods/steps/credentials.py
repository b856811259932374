"""Service account of executor pods (Spark's ExecutorKubernetesCredentialsFeatureStep)."""

from __future__ import annotations

from collections.abc import Sequence

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.kube.port import Obj
from k8s_backend.pods.objects import section
from k8s_backend.pods.step import SparkPod, StepContext


class ExecutorCredentialsStep:
    """Use the executor service account, else the driver's, unless the template names one."""

    def __init__(self, conf: KubernetesConf) -> None:
        self._account = conf.executor.service_account or conf.driver.service_account

    def configure_pod(self, pod: SparkPod, ctx: StepContext) -> SparkPod:
        spec = pod.pod.get("spec") or {}
        if self._account is None or spec.get("serviceAccount") or spec.get("serviceAccountName"):
            return pod  # the template's choice wins
        pod = pod.copy()
        spec = section(pod.pod, "spec")
        spec["serviceAccount"] = self._account
        spec["serviceAccountName"] = self._account
        return pod

    def additional_resources(self, ctx: StepContext) -> Sequence[Obj]:
        return ()
