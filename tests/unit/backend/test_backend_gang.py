"""Gang scheduling through the backend: YuniKorn annotations, the Volcano PodGroup, the built-in gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from backend_harness import (
    APP_ID,
    BASE_CONF,
    DRIVER_URL,
    Harness,
    RecordingDriver,
    create_backend,
    make_harness,
)

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.backend.state import BackendState
from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import POD_GROUPS, PODS
from k8s_backend.testing import FakeKubernetes

UNSCHEDULABLE = "0/3 nodes are available: 3 Insufficient memory."
VOLCANO = {"spark.kubernetes.scheduler.name": "volcano"}
GROUP = f"{APP_ID}-podgroup"


def harness_with_driver_pod(conf: dict[str, str]) -> Harness:
    """make_harness, but with a driver pod in the fake before the backend is created."""
    clock = ManualClock(1_700_000_000.0)
    fake = FakeKubernetes(clock=clock, watch_blocking=False)
    driver_pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "the-driver"},
        "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "spark:4.3.0"}]},
    }
    fake.create(PODS, "default", driver_pod)
    scheduler = DeterministicScheduler(clock)
    driver = RecordingDriver()
    backend = create_backend(
        {**BASE_CONF, "spark.kubernetes.driver.pod.name": "the-driver", **conf},
        api=fake,
        driver=driver,
        clock=clock,
        scheduler=scheduler,
    )
    return Harness(fake, scheduler, driver, backend)


def started(conf: dict[str, str]) -> Harness:
    h = make_harness(conf)
    h.backend.start()
    h.run()
    return h


def unschedulable(h: Harness, name: str) -> None:
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": UNSCHEDULABLE,
    }
    h.fake.patch_status(PODS, "default", name, {"phase": "Pending", "conditions": [condition]})


def register(h: Harness, *names: str) -> None:
    """The pods run and their executors register with the driver."""
    for name in names:
        h.set_phase(name, "Running")
        pod = h.fake.get(PODS, "default", name)
        h.driver.registered[pod["metadata"]["labels"]["spark-exec-id"]] = 0.0


def names(h: Harness) -> list[str]:
    return sorted(p["metadata"]["name"] for p in h.executor_pods())


# -- YuniKorn -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "conf",
    [{"spark.kubernetes.scheduler.name": "yunikorn"}, {"spark.kubernetes.yunikorn.enabled": "true"}],
    ids=["scheduler-name", "switch"],
)
def test_yunikorn_annotations_are_on_every_executor(conf: dict[str, str]) -> None:
    h = started(
        {**conf, "spark.kubernetes.node.selector.zone": "a", "spark.kubernetes.yunikorn.queue": "root.q"}
    )
    pods = h.executor_pods()
    assert len(pods) == 3
    for pod in pods:
        annotations = pod["metadata"]["annotations"]
        assert annotations["yunikorn.apache.org/app-id"] == APP_ID
        assert annotations["yunikorn.apache.org/queue"] == "root.q"
        assert pod["metadata"]["labels"]["yunikorn.apache.org/queue"] == "root.q"
        assert annotations["yunikorn.apache.org/task-group-name"] == "spark-executor"
        requests = next(c for c in pod["spec"]["containers"] if c["name"] == "spark-kubernetes-executor")[
            "resources"
        ]["requests"]
        assert json.loads(annotations["yunikorn.apache.org/task-groups"]) == [
            {"name": "spark-executor", "minMember": 3, "minResource": requests, "nodeSelector": {"zone": "a"}}
        ]
        assert requests["memory"] == "1408Mi", "the executor memory plus its overhead"
        assert pod["spec"]["schedulerName"] == "yunikorn"
    h.backend.stop()


def test_no_yunikorn_annotations_otherwise() -> None:
    h = started({})
    for pod in h.executor_pods():
        assert not any(k.startswith("yunikorn.apache.org/") for k in pod["metadata"].get("annotations") or {})
    h.backend.stop()


# -- Volcano --------------------------------------------------------------------------------------


def test_the_pod_group_is_created_before_any_executor_pod() -> None:
    h = started(
        {
            **VOLCANO,
            "spark.kubernetes.volcano.queue": "q1",
            "spark.kubernetes.volcano.priorityClassName": "hi",
        }
    )
    creates = [(c.resource_plural, c.name) for c in h.fake.calls if c.verb == "create"]
    assert creates[0] == ("podgroups", GROUP)
    assert [kind for kind, _ in creates].count("pods") == 3
    groups = h.fake.objects(POD_GROUPS, "default")
    assert len(groups) == 1
    assert groups[0]["spec"] == {
        "minMember": 3,
        "minResources": {"memory": "4224Mi", "cpu": "3"},  # 3 x (1408Mi, 1 cpu)
        "queue": "q1",
        "priorityClassName": "hi",
    }
    assert groups[0]["metadata"]["labels"]["spark-app-selector"] == APP_ID
    for pod in h.executor_pods():
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == GROUP
        assert pod["spec"]["schedulerName"] == "volcano"
    h.backend.stop()


def test_min_resources_are_the_requests_times_min_member() -> None:
    h = started(
        {
            **VOLCANO,
            "spark.kubernetes.gang.minExecutors": "2",
            "spark.executor.memory": "2g",
            "spark.executor.cores": "2",
        }
    )
    pod = h.executor_pods()[0]
    requests = next(c for c in pod["spec"]["containers"] if c["name"] == "spark-kubernetes-executor")[
        "resources"
    ]["requests"]
    assert requests == {"memory": "2432Mi", "cpu": "2"}
    spec = h.fake.objects(POD_GROUPS, "default")[0]["spec"]
    assert spec["minMember"] == 2
    assert spec["minResources"] == {"memory": "4864Mi", "cpu": "4"}
    h.backend.stop()


def test_the_driver_pod_owns_the_pod_group() -> None:
    h = harness_with_driver_pod(VOLCANO)
    h.backend.start()
    h.run()
    driver_uid = h.fake.get(PODS, "default", "the-driver")["metadata"]["uid"]
    group = h.fake.objects(POD_GROUPS, "default")[0]
    assert group["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "the-driver", "uid": driver_uid, "controller": True}
    ]
    h.backend.stop()


def test_the_template_file_is_merged_with_the_conf(tmp_path: Path) -> None:
    template = tmp_path / "pg.yaml"
    template.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {"labels": {"team": "data"}},
                "spec": {"queue": "from-template", "priorityClassName": "template-prio"},
            }
        )
    )
    h = started(
        {
            **VOLCANO,
            "spark.kubernetes.scheduler.volcano.podGroupTemplateFile": str(template),
            "spark.kubernetes.volcano.queue": "from-conf",
        }
    )
    group = h.fake.objects(POD_GROUPS, "default")[0]
    assert group["metadata"]["labels"] == {"team": "data", "spark-app-selector": APP_ID}
    assert group["spec"]["queue"] == "from-conf"
    assert group["spec"]["priorityClassName"] == "template-prio"
    assert group["spec"]["minMember"] == 3
    h.backend.stop()


def test_a_bad_template_fails_before_any_api_call(tmp_path: Path) -> None:
    fake = FakeKubernetes()
    key = "spark.kubernetes.scheduler.volcano.podGroupTemplateFile"
    with pytest.raises(ConfigError, match=key):
        KubernetesClusterSchedulerBackend.create(
            {**BASE_CONF, **VOLCANO, key: str(tmp_path / "missing.yaml")},
            app_id=APP_ID,
            driver_url=DRIVER_URL,
            api=fake,
        )
    assert fake.calls == []


def test_the_pod_group_is_deleted_at_stop() -> None:
    h = started(VOLCANO)
    h.backend.stop()
    assert h.fake.objects(POD_GROUPS, "default") == []
    deletes = h.fake.calls_of("delete_collection", POD_GROUPS)
    assert [c.label_selector for c in deletes] == [f"spark-app-selector={APP_ID}"]
    assert h.executor_pods() == []


def test_a_pod_group_left_by_an_earlier_driver_is_reused() -> None:
    h = make_harness(VOLCANO)
    h.fake.create(
        POD_GROUPS,
        "default",
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": GROUP},
            "spec": {"minMember": 3},
        },
    )
    h.backend.start()
    h.run()
    assert h.backend.state is BackendState.RUNNING
    assert len(h.executor_pods()) == 3
    h.backend.stop()


def test_no_pod_group_without_volcano() -> None:
    h = started({})
    h.backend.stop()
    assert not h.fake.calls_of("create", POD_GROUPS)
    assert not h.fake.calls_of("delete_collection", POD_GROUPS)


# -- the built-in gate ----------------------------------------------------------------------------

GATE = {"spark.kubernetes.gang.enabled": "true", "spark.kubernetes.gang.timeout": "120s"}


def test_resources_are_insufficient_until_the_gang_registers() -> None:
    h = started(GATE)
    first, second, third = names(h)
    register(h, first, second)
    h.run(1.0)
    assert not h.backend.sufficient_resources_registered()
    assert h.backend.status()["gang"] == {"min_executors": 3, "hard": False, "state": "holding"}
    register(h, third)
    assert h.backend.sufficient_resources_registered()
    assert h.backend.status()["gang"]["state"] == "open"
    h.backend.stop()


def test_the_gate_ignores_the_min_registered_ratio() -> None:
    # Without the gate 3 x 0.8 would do with 3 executors; the gang wants all 3.
    h = started({**GATE, "spark.scheduler.minRegisteredResourcesRatio": "0.5"})
    first, second, _ = names(h)
    register(h, first, second)
    assert not h.backend.sufficient_resources_registered()
    h.backend.stop()


def test_a_soft_timeout_goes_on_with_what_runs() -> None:
    h = started(GATE)
    first, second, third = names(h)
    register(h, first)
    unschedulable(h, second)
    unschedulable(h, third)
    h.run(119.0)
    assert not h.backend.sufficient_resources_registered()
    h.run(2.0)
    assert h.backend.sufficient_resources_registered()
    assert h.backend.state is BackendState.RUNNING
    assert h.backend.status()["gang"]["state"] == "timed-out"
    assert h.driver.failures == []
    h.backend.stop()


def test_executors_that_cannot_fit_fail_a_hard_gang_with_the_schedulers_reason() -> None:
    h = started({**GATE, "spark.kubernetes.gang.style": "Hard"})
    first, second, third = names(h)
    register(h, first, second)  # the cluster has room for two executors
    unschedulable(h, third)
    h.run(70.0)
    stuck = h.backend.status()["executors"]["stuck"]
    assert [(s["executor_id"], s["reason"]) for s in stuck] == [(3, f"Unschedulable: {UNSCHEDULABLE}")]
    assert h.backend.status()["state"] == "running"
    h.run(51.0)  # nobody asks: the gate's own tick fails the application at the timeout
    assert h.backend.state is BackendState.FAILED
    assert len(h.driver.failures) == 1
    failure = h.driver.failures[0]
    assert "Gang scheduling (Hard) timed out: only 2 of 3 executors were running" in failure
    assert "spark.kubernetes.gang.timeout" in failure
    assert f"executor 3: Unschedulable: {UNSCHEDULABLE}" in failure
    assert h.backend.failure_reason == failure
    assert not h.backend.sufficient_resources_registered()
    h.backend.stop()
    assert h.executor_pods() == []


def test_a_hard_gang_shorter_than_the_stuck_timeout_still_names_the_reason() -> None:
    h = started({**GATE, "spark.kubernetes.gang.style": "Hard", "spark.kubernetes.gang.timeout": "30s"})
    for name in names(h):
        unschedulable(h, name)
    h.run(31.0)
    assert h.backend.state is BackendState.FAILED
    assert f"Unschedulable: {UNSCHEDULABLE}" in h.driver.failures[0]
    h.backend.stop()


def test_without_the_gate_there_is_no_gang_status() -> None:
    h = started({})
    assert h.backend.status()["gang"] is None
    h.backend.stop()
