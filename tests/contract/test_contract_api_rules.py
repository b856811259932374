"""The real API server is the judge of the configuration checks: for a sample of values it refuses, an
executor pod (or claim) built from a valid configuration with that value put where the backend would
put it is refused by a real kube-apiserver (dry run: nothing is stored), and the same value in the
configuration is a ConfigError naming its key before any object is built.

Marked ``real``: skipped when the control plane cannot be built (no Go). The always-run halves of these
rules are in tests/conf/test_conf_api_rules.py and the pod, CLI and core tests."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

from k8s_backend.assembly.application import check_identity
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.errors import ConfigError
from k8s_backend.gang.setup import plan_gang
from k8s_backend.kube.labels import SPARK_APP_ID_LABEL
from k8s_backend.kube.port import Obj
from k8s_backend.local.control_plane import ControlPlane
from k8s_backend.pods.builder import ExecutorPodBuilder
from k8s_backend.pods.facts import DriverFacts
from k8s_backend.pods.request import ExecutorPodRequest, ExecutorPodSpec

pytestmark = [pytest.mark.real, pytest.mark.timeout(1200)]

NAMESPACE = "contract"  # created by the session's control plane
APP_ID = "spark-0123456789abcdef0123456789abcdef"
EXECUTOR_IMAGE = "spark.kubernetes.executor.container.image"
PVC = "spark.kubernetes.executor.volumes.persistentVolumeClaim.data."
CLAIM = {
    PVC + "mount.path": "/data",
    PVC + "options.claimName": "OnDemand",
    PVC + "options.storageClass": "fast",
    PVC + "options.sizeLimit": "1Gi",
}
BASE = {EXECUTOR_IMAGE: "apache/spark:4.3.0", "spark.kubernetes.namespace": NAMESPACE}


def build(
    props: Mapping[str, str], *, app_id: str = APP_ID, template: Obj | None = None, tmp: Path
) -> ExecutorPodSpec:
    """Everything the backend does with a configuration before its first create, then one executor."""
    if template is not None:
        path = tmp / "executor.yaml"
        path.write_text(yaml.safe_dump(template))
        props = {**props, "spark.kubernetes.executor.podTemplateFile": str(path)}
    check_identity(app_id, "spark://CoarseGrainedScheduler@driver:7078")
    conf = KubernetesConf.from_spark_conf({**BASE, **props})
    builder = ExecutorPodBuilder(conf, steps=plan_gang(conf).steps, facts=DriverFacts(spark_user="spark"))
    request = ExecutorPodRequest(
        executor_id=1,
        app_id=app_id,
        driver_url="spark://CoarseGrainedScheduler@driver:7078",
        pod_name_prefix="rules",
        resource_profile=conf.executor.default_profile,
    )
    return builder.build(request)


@attrs.frozen
class Case:
    """A bad value: in the configuration (refused, naming ``key``), and put into a valid object."""

    bad: Mapping[str, str]
    key: str
    put: Callable[[Obj], None]  # writes the bad value where the backend would, in the pod or claim
    server_says: str
    good: Mapping[str, str] = attrs.field(factory=dict)  # what the valid object needs besides BASE
    claim: bool = False  # the value goes into the on-demand claim, not the pod
    app_id: str = APP_ID
    template: Obj | None = None


def _container(pod: Obj) -> Obj:
    container: Obj = pod["spec"]["containers"][0]
    return container


def _set(path: str, value: Any) -> Callable[[Obj], None]:
    def put(obj: Obj) -> None:
        *parents, last = path.split(".")
        for part in parents:
            obj = obj.setdefault(part, {})
        obj[last] = value

    return put


CASES = {
    "image with a trailing blank": Case(
        {EXECUTOR_IMAGE: "apache/spark:4.3.0 "},
        EXECUTOR_IMAGE,
        lambda pod: _container(pod).update(image="apache/spark:4.3.0 "),
        "must not have leading or trailing whitespace",
    ),
    "grace period of 2^63-1 s": Case(
        {"spark.kubernetes.executor.terminationGracePeriodSeconds": str(2**63 - 1)},
        "spark.kubernetes.executor.terminationGracePeriodSeconds",
        _set("spec.terminationGracePeriodSeconds", int(float(2**63 - 1))),  # what the float seconds became
        "cannot unmarshal number 9223372036854775808",
    ),
    "annotations over 256 KiB": Case(
        {"spark.kubernetes.executor.annotation.big": "x" * 262144},
        "spark.kubernetes.executor.annotation.big",
        _set("metadata.annotations", {"big": "x" * 262144}),
        "may not be more than 262144 bytes",
    ),
    "storage class with capitals and a blank": Case(
        {**CLAIM, PVC + "options.storageClass": "Fast SSD"},
        PVC + "options.storageClass",
        _set("spec.storageClassName", "Fast SSD"),
        "spec.storageClassName: Invalid value",
        good=CLAIM,
        claim=True,
    ),
    "extended resource under requests.": Case(
        {"spark.executor.resource.gpu.amount": "1", "spark.executor.resource.gpu.vendor": "requests.x.io"},
        "spark.executor.resource.gpu.vendor",
        lambda pod: _container(pod)["resources"]["limits"].update({"requests.x.io/gpu": "1"}),
        "doesn't follow extended resource name standard",
    ),
    "CPU request above the limit": Case(
        {"spark.kubernetes.executor.request.cores": "2", "spark.kubernetes.executor.limit.cores": "1"},
        "spark.kubernetes.executor.limit.cores",
        lambda pod: _container(pod)["resources"].update(limits={"cpu": "1"}, requests={"cpu": "2"}),
        "must be less than or equal to cpu limit of 1",
    ),
    "YuniKorn queue that is no label value": Case(
        {"spark.kubernetes.yunikorn.enabled": "true", "spark.kubernetes.yunikorn.queue": "root.my queue"},
        "spark.kubernetes.yunikorn.queue",
        lambda pod: pod["metadata"]["labels"].update({"yunikorn.apache.org/queue": "root.my queue"}),
        "metadata.labels: Invalid value",
        good={"spark.kubernetes.yunikorn.enabled": "true", "spark.kubernetes.yunikorn.queue": "root.a"},
    ),
    "application id that is no label value": Case(
        {},
        "spark.app.id",
        lambda pod: pod["metadata"]["labels"].update({SPARK_APP_ID_LABEL: "my app"}),
        "metadata.labels: Invalid value",
        app_id="my app",
    ),
    "template in another namespace": Case(
        {},
        "spark.kubernetes.executor.podTemplateFile",
        _set("metadata.namespace", "other"),
        "does not match the namespace",
        template={"metadata": {"namespace": "other"}},
    ),
    # Rules from before, judged here too.
    "subPath leaving the volume": Case(
        {
            "spark.kubernetes.executor.volumes.emptyDir.scratch.mount.path": "/scratch",
            "spark.kubernetes.executor.volumes.emptyDir.scratch.mount.subPath": "../etc",
        },
        "spark.kubernetes.executor.volumes.emptyDir.scratch.mount.subPath",
        lambda pod: next(m for m in _container(pod)["volumeMounts"] if m["name"] == "scratch").update(
            subPath="../etc"
        ),
        "must not contain '..'",
        good={"spark.kubernetes.executor.volumes.emptyDir.scratch.mount.path": "/scratch"},
    ),
    "block manager port above 65535": Case(
        {"spark.blockManager.port": "70000"},
        "spark.blockManager.port",
        lambda pod: _container(pod)["ports"][0].update(containerPort=70000),
        "must be between 1 and 65535",
    ),
}


def dry_run_create(cp: ControlPlane, obj: Obj) -> tuple[int, str]:
    plural = "persistentvolumeclaims" if obj["kind"] == "PersistentVolumeClaim" else "pods"
    status, body = cp.request("POST", f"/api/v1/namespaces/{NAMESPACE}/{plural}?dryRun=All", body=obj)
    return status, body.get("message", "") if isinstance(body, dict) else str(body)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_real_server_refuses_what_the_configuration_refuses(
    name: str, real_control_plane: ControlPlane, tmp_path: Path
) -> None:
    case = CASES[name]
    with pytest.raises(ConfigError) as refused:
        build(case.bad, app_id=case.app_id, template=case.template, tmp=tmp_path)
    assert refused.value.key == case.key
    assert case.key in str(refused.value)

    spec = build(case.good, tmp=tmp_path)
    valid = spec.pvcs[0] if case.claim else spec.pod
    assert dry_run_create(real_control_plane, valid)[0] == 201  # the object without the value is fine
    bad = copy.deepcopy(valid)
    case.put(bad)
    status, message = dry_run_create(real_control_plane, bad)
    assert status in (400, 422), message
    assert case.server_says in message
