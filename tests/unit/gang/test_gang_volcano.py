"""Volcano: the application's PodGroup (from conf and template) and the executors' group annotation."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from gang_fixtures import APP_ID, DRIVER_URL, annotations_of, build_pod, builder_of, conf_of

from k8s_backend.errors import ConfigError
from k8s_backend.gang.setup import plan_gang
from k8s_backend.gang.volcano import (
    GROUP_NAME_ANNOTATION,
    TEMPLATE_KEY,
    VolcanoSettings,
    build_pod_group,
    load_template,
    multiply_quantities,
    pod_group_name,
)
from k8s_backend.kube.port import Obj

VOLCANO = {"spark.kubernetes.scheduler.name": "volcano"}
DRIVER_POD: Obj = {"metadata": {"name": "driver", "uid": "driver-uid"}}


@pytest.mark.parametrize(
    ("quantities", "times", "expected"),
    [
        ({"memory": "896Mi", "cpu": "500m"}, 3, {"memory": "2688Mi", "cpu": "1500m"}),
        ({"cpu": "1"}, 4, {"cpu": "4"}),
        ({"cpu": "1.5"}, 3, {"cpu": "4.5"}),
        ({"cpu": "1.5"}, 2, {"cpu": "3"}),
        ({"cpu": "0.1"}, 3, {"cpu": "0.3"}),
        ({"memory": "1Gi", "nvidia.com/gpu": "1"}, 2, {"memory": "2Gi", "nvidia.com/gpu": "2"}),
        ({"memory": "1e3", "cpu": "1E"}, 2, {"memory": "2e3", "cpu": "2E"}),
        ({}, 5, {}),
    ],
)
def test_multiply_quantities(quantities: dict[str, str], times: int, expected: dict[str, str]) -> None:
    assert multiply_quantities(quantities, times) == expected


@pytest.mark.parametrize("bad", ["-1", "lots", "", "1Qi", "1K", " 1", "1Gi "])
def test_multiply_rejects_what_it_cannot_read_naming_the_resource(bad: str) -> None:
    with pytest.raises(ValueError, match=f"memory: {bad!r}"):
        multiply_quantities({"memory": bad}, 2)


def test_executors_join_the_group_through_the_annotation() -> None:
    pod = build_pod(VOLCANO)
    assert annotations_of(pod)[GROUP_NAME_ANNOTATION] == f"{APP_ID}-podgroup" == pod_group_name(APP_ID)
    assert pod["spec"]["schedulerName"] == "volcano"


def test_no_group_annotation_for_other_schedulers() -> None:
    assert GROUP_NAME_ANNOTATION not in annotations_of(build_pod({}))
    assert plan_gang(conf_of()).volcano is None


def test_the_pod_group_has_min_member_min_resources_queue_and_priority() -> None:
    conf = conf_of(
        {
            **VOLCANO,
            "spark.kubernetes.volcano.queue": "batch-q",
            "spark.kubernetes.volcano.priorityClassName": "high",
        }
    )
    gang = plan_gang(conf)
    group = gang.pod_group(builder_of(conf, gang), app_id=APP_ID, driver_url=DRIVER_URL, driver_pod=None)
    assert group == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": f"{APP_ID}-podgroup",
            "namespace": "batch",
            "labels": {"spark-app-selector": APP_ID},
        },
        "spec": {
            "minMember": 4,
            "minResources": {"memory": "5632Mi", "cpu": "4"},  # 4 x (1408Mi, 1 cpu)
            "queue": "batch-q",
            "priorityClassName": "high",
        },
    }


def test_min_member_from_the_gang_key_sizes_min_resources_too() -> None:
    conf = conf_of({**VOLCANO, "spark.kubernetes.gang.minExecutors": "2", "spark.executor.cores": "2"})
    gang = plan_gang(conf)
    group = gang.pod_group(builder_of(conf, gang), app_id=APP_ID, driver_url=DRIVER_URL, driver_pod=None)
    assert group is not None
    assert group["spec"]["minMember"] == 2
    assert group["spec"]["minResources"] == {"memory": "2816Mi", "cpu": "4"}
    assert "queue" not in group["spec"] and "priorityClassName" not in group["spec"]


def test_the_driver_pod_owns_the_group() -> None:
    group = build_pod_group(
        VolcanoSettings(min_member=1), app_id=APP_ID, namespace="ns", min_resources={}, driver_pod=DRIVER_POD
    )
    assert group["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "driver", "uid": "driver-uid", "controller": True}
    ]
    assert "minResources" not in group["spec"]


def write_template(tmp_path: Path, body: object) -> str:
    path = tmp_path / "podgroup.yaml"
    path.write_text(yaml.safe_dump(body))
    return str(path)


def test_the_template_is_merged_under_the_conf(tmp_path: Path) -> None:
    template = write_template(
        tmp_path,
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "ignored", "labels": {"team": "data"}, "annotations": {"note": "kept"}},
            "spec": {
                "minMember": 1,
                "minResources": {"cpu": "6", "memory": "8Gi"},
                "queue": "template-q",
                "priorityClassName": "template-prio",
                "networkTopology": {"mode": "soft"},
            },
        },
    )
    settings = VolcanoSettings(min_member=4, queue="conf-q", template_file=template)
    group = build_pod_group(
        settings, app_id=APP_ID, namespace="ns", min_resources={"cpu": "4"}, driver_pod=DRIVER_POD
    )
    # Name, namespace and app label are always ours; the template's other metadata is kept.
    assert group["metadata"]["name"] == f"{APP_ID}-podgroup"
    assert group["metadata"]["namespace"] == "ns"
    assert group["metadata"]["labels"] == {"team": "data", "spark-app-selector": APP_ID}
    assert group["metadata"]["annotations"] == {"note": "kept"}
    assert group["metadata"]["ownerReferences"][0]["uid"] == "driver-uid"
    spec = group["spec"]
    # An explicit size in the template is kept (as in Spark's template example); queue from conf wins.
    assert spec["minMember"] == 1
    assert spec["minResources"] == {"cpu": "6", "memory": "8Gi"}
    assert spec["queue"] == "conf-q"
    assert spec["priorityClassName"] == "template-prio", "no conf priority: the template's stays"
    assert spec["networkTopology"] == {"mode": "soft"}


def test_a_template_without_sizes_gets_ours(tmp_path: Path) -> None:
    template = write_template(tmp_path, {"kind": "PodGroup", "spec": {"queue": "template-q"}})
    group = build_pod_group(
        VolcanoSettings(min_member=3, template_file=template),
        app_id=APP_ID,
        namespace="ns",
        min_resources={"cpu": "3"},
        driver_pod=None,
    )
    assert group["spec"] == {"queue": "template-q", "minMember": 3, "minResources": {"cpu": "3"}}
    assert group["apiVersion"] == "scheduling.volcano.sh/v1beta1"


def test_the_template_file_is_read_afresh_and_never_modified(tmp_path: Path) -> None:
    template = write_template(tmp_path, {"kind": "PodGroup", "spec": {}})
    before = Path(template).read_text()
    build_pod_group(
        VolcanoSettings(min_member=3, template_file=template),
        app_id=APP_ID,
        namespace="ns",
        min_resources={},
        driver_pod=None,
    )
    assert Path(template).read_text() == before
    assert load_template(template) == {"kind": "PodGroup", "spec": {}}


def test_a_missing_template_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    path = str(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match=f"{TEMPLATE_KEY}={path} cannot be read") as raised:
        load_template(path)
    assert raised.value.key == TEMPLATE_KEY


def test_invalid_yaml_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("spec: [unclosed")
    with pytest.raises(ConfigError, match="is not valid YAML"):
        load_template(str(path))


@pytest.mark.parametrize("body", [["a list"], {"kind": "Pod", "spec": {}}, "text"])
def test_a_template_that_is_not_a_pod_group_is_a_config_error(tmp_path: Path, body: object) -> None:
    with pytest.raises(ConfigError, match=r"must hold a PodGroup object \(kind: PodGroup\)"):
        load_template(write_template(tmp_path, body))


def test_plan_gang_checks_the_template_up_front(tmp_path: Path) -> None:
    conf = conf_of({**VOLCANO, TEMPLATE_KEY: str(tmp_path / "missing.yaml")})
    with pytest.raises(ConfigError, match=TEMPLATE_KEY):
        plan_gang(conf)
