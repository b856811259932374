"""Values a real API server refuses in the objects built from them: each is a ConfigError naming the key
at parse time, and the edge value next to it passes (tests/contract/test_contract_api_rules.py shows the
real server refusing the same values)."""

from __future__ import annotations

import pytest

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.errors import ConfigError
from k8s_backend.kube.labels import TOTAL_ANNOTATION_SIZE_LIMIT

IMAGE = "spark.kubernetes.container.image"
EXECUTOR_IMAGE = "spark.kubernetes.executor.container.image"
GRACE = "spark.kubernetes.executor.terminationGracePeriodSeconds"
ANNOTATION = "spark.kubernetes.executor.annotation."
PVC = "spark.kubernetes.executor.volumes.persistentVolumeClaim.data."
GPU = "spark.executor.resource.gpu."
LIMIT_CORES = "spark.kubernetes.executor.limit.cores"
# An on-demand claim with a storage class and size: the backend creates it with each executor.
CLAIM = {PVC + "mount.path": "/data", PVC + "options.claimName": "OnDemand", PVC + "options.sizeLimit": "1Gi"}


def parse(props: dict[str, str]) -> KubernetesConf:
    return KubernetesConf.from_spark_conf(props)


# (properties, the key the error names, a fragment of its message)
REFUSED = {
    "image with a trailing blank": ({IMAGE: "apache/spark:4.3.0 "}, IMAGE, "must not contain whitespace"),
    "image with a blank inside": ({EXECUTOR_IMAGE: "apache/spark 4.3.0"}, EXECUTOR_IMAGE, "whitespace"),
    "blank image": ({EXECUTOR_IMAGE: "  "}, EXECUTOR_IMAGE, "must not be empty"),
    "grace period of 2^63-1 s": ({GRACE: str(2**63 - 1)}, GRACE, "at most 36500d"),
    "annotations over 256 KiB": (
        {ANNOTATION + "a": "x" * (TOTAL_ANNOTATION_SIZE_LIMIT // 2), ANNOTATION + "b": "y" * 131072},
        ANNOTATION + "a",
        "accepts at most 262144 (256 KiB) per object",
    ),
    "claim annotations over 256 KiB": (
        {**CLAIM, PVC + "options.storageClass": "fast", PVC + "annotation.a": "x" * 262144},
        PVC + "annotation.a",
        "the annotations take 262145 bytes",
    ),
    "upper-case storage class": (
        {**CLAIM, PVC + "options.storageClass": "Fast"},
        PVC + "options.storageClass",
        "the storage class name must be a DNS-1123 subdomain",
    ),
    "storage class with a blank": (
        {**CLAIM, PVC + "options.storageClass": "fast ssd"},
        PVC + "options.storageClass",
        "must be a DNS-1123 subdomain",
    ),
    "resource vendor starting with requests.": (
        {GPU + "amount": "1", GPU + "vendor": "requests.nvidia.com"},
        GPU + "vendor",
        "must not start with 'requests.'",
    ),
    "CPU request above the limit": (
        {"spark.kubernetes.executor.request.cores": "2", LIMIT_CORES: "1"},
        LIMIT_CORES,
        "the CPU limit is below the CPU request (spark.kubernetes.executor.request.cores=2)",
    ),
    "executor cores above the CPU limit": (
        {"spark.executor.cores": "2", LIMIT_CORES: "1500m"},
        LIMIT_CORES,
        "(spark.executor.cores=2)",
    ),
    "YuniKorn queue that is not a label value": (
        {"spark.kubernetes.yunikorn.queue": "root.my queue"},
        "spark.kubernetes.yunikorn.queue",
        "must be letters, digits",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_value_the_api_server_refuses_is_a_config_error_naming_its_key(case: str) -> None:
    props, key, fragment = REFUSED[case]
    with pytest.raises(ConfigError) as caught:
        parse(props)
    assert caught.value.key == key
    assert key in str(caught.value)
    assert fragment in str(caught.value)


ACCEPTED = {
    "image with a digest": ({IMAGE: "registry.example.com:5000/spark@sha256:" + "a" * 64}, None),
    "grace period of 100 years, the longest duration": ({GRACE: str(36500 * 86400)}, None),
    "annotations of exactly 256 KiB": (
        {ANNOTATION + "a": "x" * (TOTAL_ANNOTATION_SIZE_LIMIT - len("a"))},
        None,
    ),
    "storage class with dots": ({**CLAIM, PVC + "options.storageClass": "fast.ssd-1"}, None),
    "native resource domain": ({GPU + "amount": "1", GPU + "vendor": "example.kubernetes.io"}, None),
    "CPU request equal to the limit": (
        {"spark.kubernetes.executor.request.cores": "1", LIMIT_CORES: "1000m"},
        None,
    ),
    "YuniKorn queue path": ({"spark.kubernetes.yunikorn.queue": "root.team-a.spark"}, None),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_the_edge_value_next_to_each_rule_is_accepted(case: str) -> None:
    props, _ = ACCEPTED[case]
    parse(props)
