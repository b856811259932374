"""Kerberos and the executors' NetworkPolicy against the real kube-apiserver: the driver pod with the
krb5.conf, keytab and token mounts, the krb5.conf ConfigMap, the keytab Secret and the NetworkPolicy are
accepted as built, and what the pod owns is garbage-collected with it.

Marked ``real``: skipped (with the one-line reason) when the control plane is neither cached nor buildable.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from k8s_backend.cli.common.submit_args import parse_submit_args
from k8s_backend.cli.submit.cluster_mode import ClusterPlan, plan_cluster
from k8s_backend.cli.submit.submission import build_submission
from k8s_backend.kube.masters import IN_CLUSTER_MASTER
from k8s_backend.kube.port import NETWORK_POLICIES, PODS, ApiError, KubernetesApi, Resource
from k8s_backend.local.control_plane import ControlPlane

pytestmark = [pytest.mark.real, pytest.mark.timeout(600)]

K = "spark.kubernetes.kerberos."


def plan(tmp_path: Path, app_name: str, *confs: str) -> ClusterPlan:
    app = tmp_path / "main.py"
    app.write_text("print(1)\n")
    argv = ["--master", "pyk8s://https://k8s.example:6443", "--deploy-mode", "cluster", "--name", app_name]
    for conf in ("spark.kubernetes.container.image=spark:py", "spark.kubernetes.namespace=default", *confs):
        argv += ["--conf", conf]
    sub = build_submission(parse_submit_args([*argv, str(app)]), {})
    return plan_cluster(sub, IN_CLUSTER_MASTER, api_url="https://k8s.example:6443", environ={})


def _names(api: KubernetesApi, resource: Resource) -> set[str]:
    return {o["metadata"]["name"] for o in api.list(resource, "default").items}


def _create_all(api: KubernetesApi, p: ClusterPlan) -> tuple[dict[str, object], list[tuple[Resource, str]]]:
    pod = api.create(PODS, "default", p.pod)
    made = []
    for resource, body in p.owned_objects(pod):
        made.append((resource, api.create(resource, "default", body)["metadata"]["name"]))
    return pod, made


def _wait_collected(api: KubernetesApi, made: list[tuple[Resource, str]]) -> None:
    deadline = time.monotonic() + 60
    while any(name in _names(api, resource) for resource, name in made):
        assert time.monotonic() < deadline, f"{made} outlived the driver pod that owns them"
        time.sleep(0.2)


def test_kerberos_mounts_and_objects_are_accepted_and_collected_with_the_pod(
    cp: ControlPlane, tmp_path: Path
) -> None:
    api = cp.api()
    krb5 = tmp_path / "site-krb5.conf"
    krb5.write_text("[libdefaults]\n default_realm = EXAMPLE.COM\n")
    keytab = tmp_path / "alice.keytab"
    keytab.write_bytes(b"\x05\x02\x00keytab")
    p = plan(
        tmp_path,
        "krb",
        f"{K}krb5.path={krb5}",
        f"spark.kerberos.keytab={keytab}",
        "spark.kerberos.principal=alice@EXAMPLE.COM",
    )
    pod, made = _create_all(api, p)
    kinds = {resource.kind for resource, _ in made}
    assert kinds == {"ConfigMap", "Secret", "NetworkPolicy"}
    mounts = {m["mountPath"]: m for m in pod["spec"]["containers"][0]["volumeMounts"]}
    assert mounts["/etc/krb5.conf"]["subPath"] == "krb5.conf"
    assert "/mnt/secrets/kerberos-keytab" in mounts
    api.delete(PODS, "default", p.names.pod, grace_period_seconds=0)
    _wait_collected(api, made)


def test_a_token_secret_and_a_named_krb5_map_are_accepted(cp: ControlPlane, tmp_path: Path) -> None:
    api = cp.api()
    p = plan(
        tmp_path,
        "tokens",
        f"{K}krb5.configMapName=site-krb5",
        f"{K}tokenSecret.name=dt",
        f"{K}tokenSecret.itemKey=hadoop-tokens",
        "spark.kubernetes.driver.pod.excludedFeatureSteps="
        "org.apache.spark.deploy.k8s.features.NetworkPolicyFeatureStep",
    )
    assert p.owned == ()  # nothing shipped, and no policy when its step is excluded
    pod = api.create(PODS, "default", p.pod)
    try:
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
        assert env["HADOOP_TOKEN_FILE_LOCATION"] == "/mnt/secrets/hadoop-credentials/hadoop-tokens"
    finally:
        api.delete(PODS, "default", p.names.pod, grace_period_seconds=0)


def test_the_network_policy_is_valid_and_a_broken_one_is_refused(cp: ControlPlane, tmp_path: Path) -> None:
    api = cp.api()
    p = plan(tmp_path, "policy")
    _, made = _create_all(api, p)
    [(resource, name)] = made
    assert resource == NETWORK_POLICIES
    policy = api.get(NETWORK_POLICIES, "default", name)
    assert policy["spec"]["podSelector"]["matchLabels"]["spark-role"] == "executor"
    assert policy["spec"]["policyTypes"] == ["Ingress"]  # the API server's default for an ingress-only policy
    # A peer selecting nothing is invalid: what the policy would look like built wrong is refused.
    spec = {**policy["spec"], "ingress": [{"from": [{}]}]}
    broken = {**policy, "metadata": {"name": "broken"}, "spec": spec}
    with pytest.raises(ApiError):
        api.create(NETWORK_POLICIES, "default", broken)
    api.delete(PODS, "default", p.names.pod, grace_period_seconds=0)
    _wait_collected(api, made)
