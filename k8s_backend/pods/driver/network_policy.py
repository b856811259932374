"""The executors' NetworkPolicy (Spark 4.2's NetworkPolicyFeatureStep).

A NetworkPolicy ``<prefix>-policy``, created with the driver and owned by it, selects the application's
executors (``spark-role=executor`` and its ``spark-app-selector``) and lets in only the traffic of the
application's own pods (the driver and the other executors). Spark has no key for it: it is left out by
naming the step in ``spark.kubernetes.driver.pod.excludedFeatureSteps`` (Spark's class name or this
one's). Only cluster mode builds a driver pod, so only cluster mode creates it, as Spark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from k8s_backend.kube.port import Obj
from k8s_backend.pods.constants import EXECUTOR_ROLE, SPARK_APP_ID_LABEL, SPARK_ROLE_LABEL
from k8s_backend.pods.driver.owned import owned_name
from k8s_backend.pods.driver.step import DriverContext
from k8s_backend.pods.step import SparkPod


def executor_network_policy(ctx: DriverContext) -> Obj:
    """The policy: ingress to the application's executors from the application's pods only."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": owned_name(ctx, "policy"),
            "namespace": ctx.namespace,
            "labels": {SPARK_APP_ID_LABEL: ctx.app_id},
        },
        "spec": {
            "podSelector": {"matchLabels": {SPARK_ROLE_LABEL: EXECUTOR_ROLE, SPARK_APP_ID_LABEL: ctx.app_id}},
            "ingress": [{"from": [{"podSelector": {"matchLabels": {SPARK_APP_ID_LABEL: ctx.app_id}}}]}],
        },
    }


class DriverNetworkPolicyStep:
    """Creates :func:`executor_network_policy` with the driver; the driver pod itself is unchanged."""

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        del properties  # no key: the step is on unless excluded

    def configure_pod(self, pod: SparkPod, ctx: DriverContext) -> SparkPod:
        return pod

    def additional_resources(self, ctx: DriverContext) -> Sequence[Obj]:
        return ()

    def system_properties(self, ctx: DriverContext) -> Mapping[str, str]:
        return {}

    def owned_resources(self, ctx: DriverContext) -> Sequence[Obj]:
        return [executor_network_policy(ctx)]
