"""Env vars read from secrets (``spark.kubernetes.executor.secretKeyRef.<ENV>=<secret>:<key>``)."""

from __future__ import annotations

from collections.abc import Sequence

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import Obj
from k8s_backend.pods.objects import upsert_env
from k8s_backend.pods.step import SparkPod, StepContext

SECRET_KEY_REF_PREFIX = "spark.kubernetes.executor.secretKeyRef."


def parse_secret_key_ref(env_name: str, reference: str) -> tuple[str, str]:
    """``secret:key`` to ``(secret, key)``; anything else is a :class:`ConfigError`."""
    secret, sep, key = reference.partition(":")
    if not sep or not secret or not key or ":" in key:
        raise ConfigError(
            f"{SECRET_KEY_REF_PREFIX}{env_name}={reference!r} is invalid: expected <secret name>:<key>",
            key=f"{SECRET_KEY_REF_PREFIX}{env_name}",
            value=reference,
        )
    return secret, key


class EnvSecretsStep:
    """Spark's EnvSecretsFeatureStep: one ``valueFrom.secretKeyRef`` env var per entry."""

    def __init__(self, conf: KubernetesConf) -> None:
        self._refs = {
            str(name): parse_secret_key_ref(str(name), str(ref))
            for name, ref in conf.executor.secret_env.items()
        }

    def configure_pod(self, pod: SparkPod, ctx: StepContext) -> SparkPod:
        if not self._refs:
            return pod
        pod = pod.copy()
        upsert_env(
            pod.container,
            [
                {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}
                for name, (secret, key) in self._refs.items()
            ],
        )
        return pod

    def additional_resources(self, ctx: StepContext) -> Sequence[Obj]:
        return ()
