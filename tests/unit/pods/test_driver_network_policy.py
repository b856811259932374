"""The executors' NetworkPolicy (Spark 4.2's NetworkPolicyFeatureStep): built, owned, excluded."""

from __future__ import annotations

from pathlib import Path

from k8s_backend.cli.common.submit_args import parse_submit_args
from k8s_backend.cli.submit.cluster_mode import ClusterPlan, plan_cluster
from k8s_backend.cli.submit.submission import build_submission
from k8s_backend.kube.masters import IN_CLUSTER_MASTER
from k8s_backend.kube.port import NETWORK_POLICIES
from k8s_backend.pods.driver import DriverContext, DriverPodBuilder
from k8s_backend.pods.driver.network_policy import DriverNetworkPolicyStep, executor_network_policy
from k8s_backend.pods.step import SparkPod

APP_ID = "spark-" + "c" * 32
EXCLUDED = "spark.kubernetes.driver.pod.excludedFeatureSteps"


def ctx() -> DriverContext:
    return DriverContext(properties={}, app_id=APP_ID, pod_name="app-driver", namespace="team")


def test_the_policy_selects_the_app_s_executors_and_admits_only_the_app_s_pods() -> None:
    assert executor_network_policy(ctx()) == {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "app-policy", "namespace": "team", "labels": {"spark-app-selector": APP_ID}},
        "spec": {
            "podSelector": {"matchLabels": {"spark-role": "executor", "spark-app-selector": APP_ID}},
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"spark-app-selector": APP_ID}}}]}],
        },
    }


def test_the_step_leaves_the_driver_pod_as_it_is() -> None:
    pod = SparkPod({"spec": {}}, {"name": "c"})
    step = DriverNetworkPolicyStep({})
    assert step.configure_pod(pod, ctx()) is pod
    assert step.additional_resources(ctx()) == ()
    assert step.owned_resources(ctx()) == [executor_network_policy(ctx())]


def test_the_step_runs_by_default_and_spark_s_class_name_excludes_it() -> None:
    assert any(isinstance(s, DriverNetworkPolicyStep) for s in DriverPodBuilder({}).steps)
    for name in (
        "org.apache.spark.deploy.k8s.features.NetworkPolicyFeatureStep",
        "k8s_backend.pods.driver.network_policy.DriverNetworkPolicyStep",
    ):
        steps = DriverPodBuilder({EXCLUDED: name}).steps
        assert not any(isinstance(s, DriverNetworkPolicyStep) for s in steps), name


def plan(tmp_path: Path, *confs: str) -> ClusterPlan:
    app = tmp_path / "main.py"
    app.write_text("print(1)\n")
    argv = ["--master", "pyk8s://https://k8s.example:6443", "--deploy-mode", "cluster", "--name", "np"]
    for conf in ("spark.kubernetes.container.image=spark:py", "spark.kubernetes.namespace=team", *confs):
        argv += ["--conf", conf]
    sub = build_submission(parse_submit_args([*argv, str(app)]), {})
    return plan_cluster(sub, IN_CLUSTER_MASTER, api_url="https://k8s.example:6443", environ={})


def test_cluster_mode_creates_the_policy_owned_by_the_driver_pod(tmp_path: Path) -> None:
    p = plan(tmp_path)
    created = {**p.pod, "metadata": {**p.pod["metadata"], "uid": "u-7"}}
    [(resource, body)] = p.owned_objects(created)
    assert resource == NETWORK_POLICIES
    assert body["metadata"]["ownerReferences"][0]["uid"] == "u-7"
    assert body["spec"]["podSelector"]["matchLabels"]["spark-app-selector"] == p.names.app_id
    assert body["metadata"]["name"] == f"{p.names.pod.removesuffix('-driver')}-policy"
    assert ("create", "networkpolicies") in {(n.verb, n.resource.plural) for n in p.needs}


def test_excluded_the_policy_is_neither_created_nor_asked_for(tmp_path: Path) -> None:
    p = plan(tmp_path, f"{EXCLUDED}=org.apache.spark.deploy.k8s.features.NetworkPolicyFeatureStep")
    assert p.owned == ()
    assert "networkpolicies" not in {n.resource.plural for n in p.needs}
