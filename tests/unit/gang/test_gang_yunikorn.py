"""YuniKorn: app id, queue, task groups and scheduling policy on every executor pod."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gang_fixtures import APP_ID, annotations_of, build_pod, spark_container, task_groups

from k8s_backend.errors import ConfigError
from k8s_backend.gang.yunikorn import APP_ID as APP_ID_KEY
from k8s_backend.gang.yunikorn import (
    POLICY_PARAMETERS,
    QUEUE,
    TASK_GROUP_NAME,
    TASK_GROUPS,
    YuniKornSettings,
    task_group,
)

YUNIKORN = {"spark.kubernetes.scheduler.name": "yunikorn"}
YUNIKORN_KEYS = {APP_ID_KEY, QUEUE, TASK_GROUPS, TASK_GROUP_NAME, POLICY_PARAMETERS}


def test_the_scheduler_name_turns_the_annotations_on() -> None:
    pod = build_pod({**YUNIKORN, "spark.kubernetes.node.selector.disk": "ssd"})
    assert annotations_of(pod)[APP_ID_KEY] == APP_ID
    assert pod["metadata"]["labels"][APP_ID_KEY] == APP_ID
    assert annotations_of(pod)[TASK_GROUP_NAME] == "spark-executor"
    assert task_groups(pod) == [
        {
            "name": "spark-executor",
            "minMember": 4,  # spark.executor.instances
            "minResource": {"memory": "1408Mi", "cpu": "1"},  # 1g + 384Mi overhead, 1 core
            "nodeSelector": {"disk": "ssd"},
        }
    ]
    assert (
        annotations_of(pod)[POLICY_PARAMETERS] == "placeholderTimeoutInSeconds=300 gangSchedulingStyle=Soft"
    )
    assert pod["spec"]["schedulerName"] == "yunikorn"


def test_the_explicit_switch_turns_them_on_without_the_scheduler_name() -> None:
    pod = build_pod({"spark.kubernetes.yunikorn.enabled": "true"})
    assert YUNIKORN_KEYS - {QUEUE} <= set(annotations_of(pod))
    assert pod["spec"]["schedulerName"] == "yunikorn"


def test_no_annotations_for_other_schedulers_or_when_switched_off() -> None:
    for properties in ({}, {"spark.kubernetes.scheduler.name": "default-scheduler"}):
        pod = build_pod(properties)
        assert not YUNIKORN_KEYS & set(annotations_of(pod))
        assert APP_ID_KEY not in pod["metadata"]["labels"]
    off = build_pod({**YUNIKORN, "spark.kubernetes.yunikorn.enabled": "false"})
    assert not YUNIKORN_KEYS & set(annotations_of(off))


def test_min_resource_equals_the_container_requests_including_overheads() -> None:
    pod = build_pod(
        {
            **YUNIKORN,
            "spark.executor.memory": "2g",
            "spark.executor.memoryOverhead": "512m",
            "spark.executor.pyspark.memory": "256m",
            "spark.executor.cores": "2",
        }
    )
    requests = spark_container(pod)["resources"]["requests"]
    assert requests == {"memory": "2816Mi", "cpu": "2"}
    assert task_groups(pod)[0]["minResource"] == requests


def test_min_member_comes_from_the_gang_key_when_set() -> None:
    pod = build_pod({**YUNIKORN, "spark.kubernetes.gang.minExecutors": "2"})
    assert task_groups(pod)[0]["minMember"] == 2


def test_min_member_is_at_least_one_when_no_executor_is_requested_at_start() -> None:
    pod = build_pod({**YUNIKORN, "spark.executor.instances": "0"})
    assert task_groups(pod)[0]["minMember"] == 1


def test_queue_task_group_name_and_policy_come_from_their_keys() -> None:
    pod = build_pod(
        {
            **YUNIKORN,
            "spark.kubernetes.yunikorn.queue": "root.spark",
            "spark.kubernetes.yunikorn.taskGroupName": "workers",
            "spark.kubernetes.gang.timeout": "90s",
            "spark.kubernetes.gang.style": "Hard",
        }
    )
    assert pod["metadata"]["labels"][QUEUE] == "root.spark"
    assert annotations_of(pod)[QUEUE] == "root.spark"
    assert annotations_of(pod)[TASK_GROUP_NAME] == "workers"
    assert task_groups(pod)[0]["name"] == "workers"
    assert annotations_of(pod)[POLICY_PARAMETERS] == "placeholderTimeoutInSeconds=90 gangSchedulingStyle=Hard"


def test_no_queue_annotation_without_a_queue() -> None:
    pod = build_pod(YUNIKORN)
    assert QUEUE not in annotations_of(pod) and QUEUE not in pod["metadata"]["labels"]


def test_tolerations_and_affinity_of_the_pod_template_are_in_the_task_group(tmp_path: Path) -> None:
    template = tmp_path / "executor.yaml"
    toleration = {"key": "dedicated", "operator": "Equal", "value": "spark", "effect": "NoSchedule"}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["b"]}]}
                ]
            }
        }
    }
    template.write_text(
        json.dumps(
            {"apiVersion": "v1", "kind": "Pod", "spec": {"tolerations": [toleration], "affinity": affinity}}
        )
    )
    pod = build_pod({**YUNIKORN, "spark.kubernetes.executor.podTemplateFile": str(template)})
    group = task_groups(pod)[0]
    assert group["tolerations"] == [toleration]
    assert group["affinity"] == affinity
    assert "nodeSelector" not in group


def test_every_executor_carries_the_same_task_groups() -> None:
    first = build_pod(YUNIKORN, executor_id=1)
    second = build_pod(YUNIKORN, executor_id=9)
    assert annotations_of(first)[TASK_GROUPS] == annotations_of(second)[TASK_GROUPS]


def test_extended_resource_limits_count_as_requests() -> None:
    container = {
        "resources": {
            "requests": {"memory": "1408Mi", "cpu": "1"},
            "limits": {"memory": "1408Mi", "nvidia.com/gpu": "1"},
        }
    }
    group = task_group(YuniKornSettings(min_member=2), {"spec": {}}, container)
    assert group == {
        "name": "spark-executor",
        "minMember": 2,
        "minResource": {"memory": "1408Mi", "cpu": "1", "nvidia.com/gpu": "1"},
    }


@pytest.mark.parametrize("bad", ["Bad_Name", "x" * 64])
def test_a_bad_task_group_name_is_a_config_error(bad: str) -> None:
    with pytest.raises(ConfigError, match="spark.kubernetes.yunikorn.taskGroupName"):
        build_pod({**YUNIKORN, "spark.kubernetes.yunikorn.taskGroupName": bad})
