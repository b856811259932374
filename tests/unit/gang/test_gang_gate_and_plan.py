"""The built-in all-or-nothing gate, and which gang mechanisms a configuration turns on."""

from __future__ import annotations

import pytest
from gang_fixtures import APP_ID, DRIVER_URL, builder_of, conf_of

from k8s_backend.errors import ConfigError
from k8s_backend.gang.gate import GangGate, GateState
from k8s_backend.gang.setup import plan_gang
from k8s_backend.gang.volcano import VolcanoSettings, VolcanoStep
from k8s_backend.gang.yunikorn import YuniKornStep


def test_the_gate_holds_until_the_gang_runs() -> None:
    gate = GangGate(min_executors=3, timeout=60)
    assert gate.decide(running=2, started_at=100, now=159) is GateState.HOLDING
    assert gate.decide(running=3, started_at=100, now=101) is GateState.OPEN
    assert gate.decide(running=5, started_at=100, now=101) is GateState.OPEN


def test_the_gate_times_out_at_the_timeout() -> None:
    gate = GangGate(min_executors=3, timeout=60)
    assert gate.decide(running=2, started_at=100, now=160) is GateState.TIMED_OUT
    assert gate.decide(running=3, started_at=100, now=160) is GateState.OPEN, "a full gang is never late"


def test_the_failure_reason_names_counts_key_and_pending_reasons() -> None:
    gate = GangGate(min_executors=3, timeout=60, hard=True)
    stuck = [f"executor {i}: Unschedulable: 0/3 nodes are available" for i in range(1, 8)]
    reason = gate.failure_reason(running=1, waited=60.4, stuck=stuck)
    assert reason.startswith(
        "Gang scheduling (Hard) timed out: only 1 of 3 executors were running after 60s "
        "(spark.kubernetes.gang.timeout). Pending executors: executor 1: Unschedulable"
    )
    assert "executor 5:" in reason and "executor 6:" not in reason, "at most five reasons"
    assert reason.endswith(
        "Fix what keeps them pending, or raise spark.kubernetes.gang.timeout, lower "
        "spark.kubernetes.gang.minExecutors, or set spark.kubernetes.gang.style=Soft to go on with the "
        "executors that run"
    )


def test_the_failure_reason_says_when_kubernetes_gave_none() -> None:
    reason = GangGate(min_executors=2, timeout=1, hard=True).failure_reason(0, 1.0, [])
    assert "Pending executors: no reason reported by Kubernetes. Fix what keeps them pending" in reason


def test_nothing_by_default() -> None:
    gang = plan_gang(conf_of())
    assert gang.steps == () and gang.volcano is None and gang.gate is None


def test_the_gate_is_on_only_when_enabled_and_takes_min_timeout_and_style() -> None:
    gang = plan_gang(
        conf_of(
            {
                "spark.kubernetes.gang.enabled": "true",
                "spark.kubernetes.gang.minExecutors": "3",
                "spark.kubernetes.gang.timeout": "2min",
                "spark.kubernetes.gang.style": "Hard",
            }
        )
    )
    assert gang.gate == GangGate(min_executors=3, timeout=120.0, hard=True)
    assert gang.steps == ()
    soft = plan_gang(conf_of({"spark.kubernetes.gang.enabled": "true"})).gate
    assert soft == GangGate(min_executors=4, timeout=300.0, hard=False), "initial executors, 300s, Soft"


def test_yunikorn_adds_its_step_without_a_gate() -> None:
    gang = plan_gang(conf_of({"spark.kubernetes.scheduler.name": "yunikorn"}))
    assert [type(s) for s in gang.steps] == [YuniKornStep]
    assert gang.gate is None and gang.volcano is None


def test_the_executor_scheduler_name_counts_too() -> None:
    gang = plan_gang(conf_of({"spark.kubernetes.executor.scheduler.name": "yunikorn"}))
    assert [type(s) for s in gang.steps] == [YuniKornStep]


def test_volcano_adds_its_step_and_pod_group_settings() -> None:
    gang = plan_gang(
        conf_of(
            {
                "spark.kubernetes.scheduler.name": "volcano",
                "spark.kubernetes.volcano.queue": "q",
                "spark.kubernetes.volcano.priorityClassName": "p",
            }
        )
    )
    assert [type(s) for s in gang.steps] == [VolcanoStep]
    assert gang.volcano == VolcanoSettings(min_member=4, queue="q", priority_class_name="p")


def test_the_gate_combines_with_a_gang_scheduler() -> None:
    gang = plan_gang(
        conf_of({"spark.kubernetes.scheduler.name": "volcano", "spark.kubernetes.gang.enabled": "true"})
    )
    assert gang.volcano is not None and gang.gate is not None


def test_without_volcano_there_is_no_pod_group() -> None:
    conf = conf_of()
    gang = plan_gang(conf)
    assert (
        gang.pod_group(builder_of(conf, gang), app_id=APP_ID, driver_url=DRIVER_URL, driver_pod=None) is None
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("spark.kubernetes.gang.style", "Medium"),
        ("spark.kubernetes.gang.minExecutors", "0"),
        ("spark.kubernetes.gang.timeout", "0s"),
        ("spark.kubernetes.executor.stuckTimeout", "0s"),
        ("spark.kubernetes.executor.imagePullFailTimeout", "-1s"),
        ("spark.kubernetes.recovery.policy", "keep"),
    ],
)
def test_bad_values_are_config_errors_naming_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=key):
        conf_of({key: value})
