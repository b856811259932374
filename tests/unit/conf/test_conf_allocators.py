"""The allocator keys: direct, statefulset and deployment accepted; the deployment's pod deletion cost
only with it, and required with dynamic allocation (as Spark's KubernetesClusterManager)."""

from __future__ import annotations

import pytest

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.errors import ConfigError

ALLOCATOR = "spark.kubernetes.allocation.pods.allocator"
COST = "spark.kubernetes.executor.podDeletionCost"
DYNAMIC = {
    "spark.dynamicAllocation.enabled": "true",
    "spark.dynamicAllocation.shuffleTracking.enabled": "true",
}


@pytest.mark.parametrize("name", ["direct", "statefulset", "deployment"])
def test_the_three_allocators_are_accepted(name: str) -> None:
    assert KubernetesConf.from_spark_conf({ALLOCATOR: name}).allocation.allocator == name


def test_a_custom_allocator_class_is_refused_naming_the_choices() -> None:
    with pytest.raises(ConfigError, match="direct, statefulset or deployment") as error:
        KubernetesConf.from_spark_conf({ALLOCATOR: "com.example.MyAllocator"})
    assert error.value.key == ALLOCATOR


def test_the_deletion_cost_is_read_with_the_deployment_allocator() -> None:
    conf = KubernetesConf.from_spark_conf({ALLOCATOR: "deployment", COST: "-100", **DYNAMIC})
    assert conf.allocation.pod_deletion_cost == -100
    assert KubernetesConf.from_spark_conf({}).allocation.pod_deletion_cost is None


@pytest.mark.parametrize("name", ["direct", "statefulset"])
def test_the_deletion_cost_with_another_allocator_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=f"only with {ALLOCATOR}=deployment") as error:
        KubernetesConf.from_spark_conf({ALLOCATOR: name, COST: "-1"})
    assert error.value.key == COST


def test_the_deployment_allocator_with_dynamic_allocation_needs_the_cost() -> None:
    with pytest.raises(ConfigError, match="with dynamic allocation needs") as error:
        KubernetesConf.from_spark_conf({ALLOCATOR: "deployment", **DYNAMIC})
    assert error.value.key == COST
    assert KubernetesConf.from_spark_conf({ALLOCATOR: "deployment"}).allocation.pod_deletion_cost is None


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("spark.kubernetes.allocation.quotaAware", "true"),
        ("spark.kubernetes.executor.nodeFailures.threshold", "2"),
        ("spark.kubernetes.executor.oom.overheadFactor", "1.5"),
    ],
)
@pytest.mark.parametrize("name", ["statefulset", "deployment"])
def test_what_only_the_direct_allocator_does_is_refused_with_the_others(
    name: str, key: str, value: str
) -> None:
    with pytest.raises(ConfigError, match="acts only with the direct allocator") as error:
        KubernetesConf.from_spark_conf({ALLOCATOR: name, key: value})
    assert error.value.key == key
    KubernetesConf.from_spark_conf({ALLOCATOR: "direct", key: value})


CLAIM = "spark.kubernetes.executor.volumes.persistentVolumeClaim.data"


def claim(name: str) -> dict[str, str]:
    return {f"{CLAIM}.mount.path": "/data", f"{CLAIM}.options.claimName": name}


def test_the_deployment_allocator_refuses_claims_as_spark() -> None:
    with pytest.raises(ConfigError, match="not supported with the deployment allocator") as error:
        KubernetesConf.from_spark_conf({ALLOCATOR: "deployment", **claim("OnDemand")})
    assert error.value.key == f"{CLAIM}.options.claimName"


def test_the_statefulset_allocator_takes_on_demand_claims_not_ones_named_after_the_executor() -> None:
    KubernetesConf.from_spark_conf({ALLOCATOR: "statefulset", **claim("OnDemand")})
    KubernetesConf.from_spark_conf({ALLOCATOR: "statefulset", **claim("shared-data")})
    with pytest.raises(ConfigError, match="set it to OnDemand") as error:
        KubernetesConf.from_spark_conf({ALLOCATOR: "statefulset", **claim("data-SPARK_EXECUTOR_ID")})
    assert error.value.key == f"{CLAIM}.options.claimName"
    KubernetesConf.from_spark_conf({ALLOCATOR: "direct", **claim("data-SPARK_EXECUTOR_ID")})
