"""DisruptionDecider as a pure function: executor pods + nodes + what was noticed -> notices + noticed."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from lifecycle_fixtures import pod, running, state

from k8s_backend.conf.model import LifecycleConf
from k8s_backend.kube.port import Obj
from k8s_backend.lifecycle.disruptions import (
    DEFAULT_DISRUPTION_TAINTS,
    DisruptionDecider,
    NodeView,
    parse_taints,
)
from k8s_backend.snapshots.states import ExecutorPodState

DECIDER = DisruptionDecider()


def on_node(exec_id: int, node: str, phase: str = "Running", conditions: list[Obj] | None = None) -> Obj:
    obj = pod(exec_id, phase, containers=[running("spark-kubernetes-executor")])
    obj["spec"]["nodeName"] = node
    if conditions is not None:
        obj["status"]["conditions"] = conditions
    return obj


def pods(*objs: Obj) -> dict[int, ExecutorPodState]:
    states = [state(o) for o in objs]
    return {s.executor_id: s for s in states}


def disruption_target(reason: str = "EvictionByEvictionAPI", status: str = "True") -> Obj:
    return {
        "type": "DisruptionTarget",
        "status": status,
        "reason": reason,
        "message": "Eviction API: evicting",
    }


def node(name: str, *, cordoned: bool = False, taints: tuple[str, ...] = ()) -> NodeView:
    return NodeView(name, cordoned, frozenset(taints))


def test_a_pod_with_the_disruption_target_condition_is_noticed_with_its_reason() -> None:
    decision = DECIDER.decide(
        pods(on_node(1, "n1", conditions=[disruption_target()]), on_node(2, "n1")), None
    )
    assert [n.executor_id for n in decision.notices] == [1]
    notice = decision.notices[0]
    assert notice.pod_name.endswith("-exec-1") and notice.node_name == "n1"
    assert "DisruptionTarget" in notice.reason and "EvictionByEvictionAPI" in notice.reason
    assert decision.noticed == {1}


def test_a_false_disruption_target_condition_is_no_notice() -> None:
    decision = DECIDER.decide(pods(on_node(1, "n1", conditions=[disruption_target(status="False")])), None)
    assert decision.notices == ()


def test_executors_on_a_cordoned_node_are_noticed_and_others_are_not() -> None:
    nodes = {"n1": node("n1", cordoned=True), "n2": node("n2")}
    decision = DECIDER.decide(pods(on_node(1, "n1"), on_node(2, "n2"), on_node(3, "n1", "Pending")), nodes)
    assert [n.executor_id for n in decision.notices] == [1, 3]
    assert "n1 is cordoned" in decision.notices[0].reason


@pytest.mark.parametrize("taint", ["ToBeDeletedByClusterAutoscaler", "karpenter.sh/disrupted"])
def test_executors_on_a_node_with_a_known_disruption_taint_are_noticed(taint: str) -> None:
    decision = DECIDER.decide(pods(on_node(1, "n1")), {"n1": node("n1", taints=(taint, "other"))})
    assert len(decision.notices) == 1 and f"taint {taint}" in decision.notices[0].reason


def test_a_taint_not_in_the_configured_list_is_ignored() -> None:
    decider = DisruptionDecider(taints=frozenset({"example.com/draining"}))
    nodes = {"n1": node("n1", taints=("ToBeDeletedByClusterAutoscaler",)), "n2": node("n2", cordoned=True)}
    assert decider.decide(pods(on_node(1, "n1"), on_node(2, "n2")), nodes).notices == ()
    tainted = {"n1": node("n1", taints=("example.com/draining",))}
    assert len(decider.decide(pods(on_node(1, "n1")), tainted).notices) == 1


def test_without_the_unschedulable_key_a_cordon_is_no_notice() -> None:
    decider = DisruptionDecider(taints=frozenset({"ToBeDeletedByClusterAutoscaler"}))
    assert decider.decide(pods(on_node(1, "n1")), {"n1": node("n1", cordoned=True)}).notices == ()


def test_an_empty_taint_list_reads_no_nodes_but_pod_conditions_still_count() -> None:
    decider = DisruptionDecider(taints=frozenset())
    assert not decider.reads_nodes
    decision = decider.decide(
        pods(on_node(1, "n1", conditions=[disruption_target("PreemptionByScheduler")])), None
    )
    assert "PreemptionByScheduler" in decision.notices[0].reason


def test_each_executor_is_noticed_once_while_its_pod_exists() -> None:
    nodes = {"n1": node("n1", cordoned=True)}
    first = DECIDER.decide(pods(on_node(1, "n1")), nodes)
    second = DECIDER.decide(pods(on_node(1, "n1"), on_node(2, "n1")), nodes, first.noticed)
    assert [n.executor_id for n in second.notices] == [2]
    assert second.noticed == {1, 2}


def test_only_the_named_executors_are_looked_at_when_the_nodes_did_not_change() -> None:
    nodes = {"n1": node("n1", cordoned=True)}
    view = pods(on_node(1, "n1"), on_node(2, "n1"))
    assert DECIDER.decide(view, nodes, only=set()).notices == ()
    assert [n.executor_id for n in DECIDER.decide(view, nodes, only={2, 9}).notices] == [2]  # 9: gone
    assert [n.executor_id for n in DECIDER.decide(view, nodes).notices] == [1, 2]  # None: every pod
    # Noticed executors are still forgotten when their pods are gone, whoever is looked at.
    assert DECIDER.decide(pods(on_node(2, "n1")), nodes, frozenset({1, 2}), only=()).noticed == {2}


def test_the_noticed_executors_are_forgotten_once_their_pods_are_gone() -> None:
    decision = DECIDER.decide(pods(on_node(2, "n2")), {"n2": node("n2")}, frozenset({1, 2}))
    assert decision.noticed == {2} and decision.notices == ()


def test_an_evicted_pod_is_noticed_while_it_terminates_but_ended_pods_are_not() -> None:
    evicted = on_node(1, "n1", conditions=[disruption_target()])
    evicted["metadata"]["deletionTimestamp"] = "2026-01-01T00:05:00Z"
    failed = on_node(3, "n1", "Failed", conditions=[disruption_target()])
    decision = DECIDER.decide(pods(evicted, failed), None)
    assert [n.executor_id for n in decision.notices] == [1]


def test_a_pod_deleted_without_a_disruption_condition_is_not_noticed_for_its_node() -> None:
    killed = on_node(2, "n1")  # e.g. the driver killed it: no notice, whatever its node
    killed["metadata"]["deletionTimestamp"] = "2026-01-01T00:05:00Z"
    assert DECIDER.decide(pods(killed), {"n1": node("n1", cordoned=True)}).notices == ()


def test_a_pod_not_yet_scheduled_or_on_an_unknown_node_is_not_noticed() -> None:
    unscheduled = pod(1, "Pending")
    decision = DECIDER.decide(pods(unscheduled, on_node(2, "gone")), {"n1": node("n1", cordoned=True)})
    assert decision.notices == ()


def test_node_views_read_the_node_object_and_tolerate_malformed_parts() -> None:
    obj: dict[str, Any] = {
        "metadata": {"name": "n1"},
        "spec": {"unschedulable": True, "taints": [{"key": "a", "effect": "NoSchedule"}, "junk", {"x": 1}]},
    }
    assert NodeView.of(obj) == NodeView("n1", True, frozenset({"a"}))
    assert NodeView.of({}) == NodeView("", False, frozenset())


def test_the_decider_is_frozen_and_its_defaults_are_the_confs() -> None:
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        DECIDER.taints = frozenset()  # type: ignore[misc]
    assert (
        frozenset(LifecycleConf().disruption_taints) == DECIDER.taints == frozenset(DEFAULT_DISRUPTION_TAINTS)
    )
    assert parse_taints([" a ", "", "b"]) == {"a", "b"}
