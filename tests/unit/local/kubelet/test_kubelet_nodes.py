"""Quantities, pod requests and node fitting (pure)."""

from __future__ import annotations

import pytest

from k8s_backend.local.kubelet import Node, NodePool, Resources
from k8s_backend.local.kubelet.nodes import pod_requests

MI = 1024 * 1024


def test_bad_quantity_names_the_field_and_value() -> None:
    with pytest.raises(ValueError, match=r"node n cpu: 'lots' is not a Kubernetes quantity"):
        Node.of("n", cpu="lots")


def test_node_quantities_are_read_as_the_api_server_reads_them() -> None:
    # "1Ei" used to be refused by the kubelet's own parser, and " 2" accepted; now both follow the server.
    assert Node.of("n", cpu="2", memory="1Ei").allocatable == Resources(2000, 2**60)
    with pytest.raises(ValueError, match=r"node n cpu: ' 2' is not a Kubernetes quantity"):
        Node.of("n", cpu=" 2")


def _pod(
    cpu: str | None = None, memory: str | None = None, *, limit_only: bool = False, **spec: object
) -> dict:
    amounts = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    resources = {"limits": amounts} if limit_only else {"requests": amounts}
    return {"spec": {"containers": [{"name": "c", "resources": resources}], **spec}}


def test_requests_sum_containers_and_take_the_largest_init_container() -> None:
    pod = {
        "spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "500m"}}},
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3", "memory": "10Mi"}}}],
        }
    }
    assert pod_requests(pod) == Resources(3000, 1024 * MI)


def test_a_limit_without_request_counts_as_the_request() -> None:
    assert pod_requests(_pod("2", "1Gi", limit_only=True)) == Resources(2000, 1024 * MI)


def test_pods_fill_a_node_then_the_next_is_unschedulable_with_the_schedulers_message() -> None:
    pool = NodePool([Node.of("n1", cpu="2", memory="4Gi")])
    assert pool.place("a", _pod("1", "896Mi")).node == "n1"
    assert pool.place("b", _pod("1", "896Mi")).node == "n1"
    refused = pool.place("c", _pod("1", "896Mi"))
    assert refused.node is None
    assert refused.message == "0/1 nodes are available: 1 Insufficient cpu."
    assert pool.release("a") is True
    assert pool.place("c", _pod("1", "896Mi")).node == "n1"


def test_placing_twice_reserves_once() -> None:
    pool = NodePool([Node.of("n1", cpu="1", memory="1Gi")])
    assert pool.place("a", _pod("1")).node == "n1"
    assert pool.place("a", _pod("1")).node == "n1"
    assert pool.free("n1") == Resources(0, 1024 * MI)
    assert pool.release("a") and not pool.release("a")


def test_spreads_over_the_least_allocated_node() -> None:
    pool = NodePool([Node.of("n1", cpu="4", memory="4Gi"), Node.of("n2", cpu="4", memory="4Gi")])
    nodes = [pool.place(str(i), _pod("1", "1Gi")).node for i in range(4)]
    assert sorted(nodes) == ["n1", "n1", "n2", "n2"]


def test_message_counts_each_shortage_and_selector_mismatch() -> None:
    pool = NodePool(
        [
            Node.of("small", cpu="1", memory="1Gi", labels={"pool": "a"}),
            Node.of("big", cpu="8", memory="1Gi", labels={"pool": "a"}),
            Node.of("other", cpu="8", memory="64Gi", labels={"pool": "b"}),
        ]
    )
    placement = pool.place("x", _pod("2", "2Gi", nodeSelector={"pool": "a"}))
    assert placement.message == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 Insufficient memory, "
        "1 node(s) didn't match Pod's node affinity/selector."
    )


def test_node_selector_and_node_name_are_honoured() -> None:
    pool = NodePool([Node.of("n1"), Node.of("n2", labels={"disk": "ssd"})])
    assert pool.place("a", _pod("1", nodeSelector={"disk": "ssd"})).node == "n2"
    assert pool.place("b", _pod("1", nodeName="n1")).node == "n1"
    assert pool.place("c", _pod("1", nodeSelector={"kubernetes.io/hostname": "n1"})).node == "n1"


def test_duplicate_or_missing_nodes_are_refused() -> None:
    with pytest.raises(ValueError, match="'n1' is used twice"):
        NodePool([Node.of("n1"), Node.of("n1")])
    with pytest.raises(ValueError, match="at least one simulated node"):
        NodePool([])
