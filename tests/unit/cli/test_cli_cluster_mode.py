"""Cluster mode against a FakeKubernetes: what is created, in which order, and what happens on failure."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cli_support import APPS, IMAGE, AccessReviews, OnWatch, cli

from k8s_backend.cli.common.properties import parse_properties
from k8s_backend.kube.port import CONFIG_MAPS, PODS, SECRETS, SERVICES
from k8s_backend.memkube.api import Call
from k8s_backend.testing import FakeKubernetes

MASTER = "pyk8s://https://k8s.test:6443"


def submit(*extra: str, app: str = str(APPS / "pi.py")) -> list[str]:
    return ["submit", "--master", MASTER, "--deploy-mode", "cluster", "--conf", IMAGE, *extra, app, "10"]


def object_creations(fake: FakeKubernetes) -> list[Call]:
    """Creations of objects (access reviews, which the fake refuses, are questions, not objects)."""
    return [
        c
        for c in fake.calls_of("create")
        if c.resource_plural in ("pods", "services", "secrets", "configmaps")
    ]


def finish(fake: FakeKubernetes, code: int) -> None:
    (pod,) = fake.objects(PODS)
    name = pod["metadata"]["name"]
    phase = "Succeeded" if code == 0 else "Failed"
    state = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}}
    fake.patch_status(
        PODS,
        "default",
        name,
        {"phase": phase, "containerStatuses": [{"name": "spark-kubernetes-driver", "state": state}]},
    )


def test_cluster_mode_creates_pod_then_owned_service_and_config_map() -> None:
    fake = FakeKubernetes()
    result = cli(submit("--conf", "spark.kubernetes.submission.waitAppCompletion=false"), fake)
    assert result.code == 0, result.err
    creates = [(c.resource_plural, c.name) for c in object_creations(fake)]
    (pod,) = fake.objects(PODS)
    (service,) = fake.objects(SERVICES)
    (config_map,) = fake.objects(CONFIG_MAPS)
    assert [plural for plural, _ in creates] == ["pods", "services", "configmaps"]
    for owned in (service, config_map):
        (owner,) = owned["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"]) == ("Pod", pod["metadata"]["uid"])
    mounted = pod["spec"]["volumes"][0]["configMap"]["name"]
    assert mounted == config_map["metadata"]["name"]
    submission_id = f"default:{pod['metadata']['name']}"
    assert f"submission ID {submission_id}" in result.err
    assert f"k8s-backend kill --master {MASTER} {submission_id}" in result.err


@pytest.mark.parametrize("code", [0, 3])
def test_waiting_reports_changes_and_exits_with_the_driver_exit_code(code: int) -> None:
    fake = FakeKubernetes()
    result = cli(submit(), OnWatch(fake, lambda: finish(fake, code)))
    assert result.code == code
    assert "Pending" in result.err
    assert f"terminated: exit code {code}" in result.err
    assert f"finished with exit code {code}" in result.err


def test_a_failed_step_deletes_what_was_created() -> None:
    fake = FakeKubernetes()
    fake.fail_next("create", CONFIG_MAPS, status=500, count=1, message="etcd is sad")
    result = cli(submit(), fake)
    assert result.code == 1
    assert "create configmaps in namespace default failed: 500" in result.err
    assert fake.objects(PODS) == [] and fake.objects(SERVICES) == [] and fake.objects(CONFIG_MAPS) == []


def test_a_refused_pod_creation_creates_nothing() -> None:
    fake = FakeKubernetes()
    fake.fail_next("create", PODS, status=403, count=1, message='pods is forbidden: User "me" cannot create')
    result = cli(submit(), fake)
    assert result.code == 2
    assert "missing permission: create pods in namespace default" in result.err
    assert fake.calls_of("create", SERVICES) == []


def test_a_permission_the_access_review_denies_is_reported_before_anything_is_created() -> None:
    fake = FakeKubernetes()
    api = AccessReviews(fake, denied={("create", "services")})
    result = cli(submit(), api)
    assert result.code == 2
    assert "missing permission: create services in namespace default (RBAC: no rule)" in result.err
    assert "kubectl auth can-i create services -n default" in result.err
    assert object_creations(fake) == []
    assert ("create", "pods") in api.reviews


def test_credentials_the_server_rejects_are_a_usage_error() -> None:
    fake = FakeKubernetes()
    fake.fail_next("list", PODS, status=401, count=1, message="Unauthorized")
    result = cli(submit(), fake)
    assert result.code == 2
    assert "rejected the credentials (401 Unauthorized; API server from spark.master" in result.err
    assert object_creations(fake) == []


def test_a_bad_value_found_while_planning_creates_nothing(tmp_path: Path) -> None:
    fake = FakeKubernetes()
    result = cli(submit("--conf", "spark.kubernetes.driver.label.spark-role=x"), fake)
    assert result.code == 2
    assert "spark-role is reserved" in result.err
    assert fake.calls == []


def test_the_namespace_is_used_everywhere() -> None:
    fake = FakeKubernetes(namespaces=["team"])
    result = cli(
        submit(
            "--conf",
            "spark.kubernetes.namespace=team",
            "--conf",
            "spark.kubernetes.submission.waitAppCompletion=false",
        ),
        fake,
    )
    assert result.code == 0, result.err
    assert {c.namespace for c in object_creations(fake)} == {"team"}
    assert "submission ID team:" in result.err


DRIVER_TOKENS = (
    "--conf",
    "spark.kubernetes.authenticate.driver.oauthToken=TOPSECRET",
    "--conf",
    "spark.kubernetes.authenticate.oauthToken=TOPSECRET2",
)


def test_the_driver_token_goes_into_a_secret_owned_by_the_driver_pod_never_the_config_map() -> None:
    fake = FakeKubernetes()
    api = AccessReviews(fake, denied=())
    result = cli(submit(*DRIVER_TOKENS, "--conf", "spark.kubernetes.submission.waitAppCompletion=false"), api)
    assert result.code == 0, result.err
    (pod,) = fake.objects(PODS)
    (config_map,) = fake.objects(CONFIG_MAPS)
    (secret,) = fake.objects(SECRETS)
    assert "TOPSECRET" not in json.dumps([pod, config_map, fake.objects(SERVICES)])
    assert [c.resource_plural for c in object_creations(fake)] == [
        "pods",
        "services",
        "secrets",
        "configmaps",
    ]
    assert ("create", "secrets") in api.reviews
    assert secret["metadata"]["name"] == pod["metadata"]["name"] + "-token"
    assert base64.b64decode(secret["data"]["token"]).decode() == "TOPSECRET2"
    (owner,) = secret["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"]) == ("Pod", pod["metadata"]["uid"])
    assert (
        secret["metadata"]["labels"]["spark-app-selector"] == pod["metadata"]["labels"]["spark-app-selector"]
    )
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    (mount,) = [m for m in pod["spec"]["containers"][0]["volumeMounts"] if "secrets" in m["mountPath"]]
    assert volumes[mount["name"]]["secret"]["secretName"] == secret["metadata"]["name"]
    assert mount["readOnly"] is True
    props = parse_properties(config_map["data"]["spark.properties"])
    assert props["spark.kubernetes.authenticate.oauthTokenFile"] == mount["mountPath"] + "/token"
    fake.delete(PODS, "default", pod["metadata"]["name"])
    assert fake.objects(SECRETS) == []  # it goes with the driver pod


def test_a_failed_step_after_the_secret_deletes_it_too() -> None:
    fake = FakeKubernetes()
    fake.fail_next("create", CONFIG_MAPS, status=500, count=1, message="etcd is sad")
    result = cli(submit(*DRIVER_TOKENS), fake)
    assert result.code == 1
    assert fake.calls_of("create", SECRETS)
    assert fake.objects(PODS) == [] and fake.objects(SECRETS) == [] and fake.objects(SERVICES) == []


def test_verbose_prints_the_properties_with_secrets_hidden() -> None:
    fake = FakeKubernetes()
    result = cli(
        submit(
            "--verbose",
            "--conf",
            "spark.kubernetes.authenticate.submission.oauthToken=s3cret",
            *DRIVER_TOKENS,
            "--conf",
            "spark.kubernetes.submission.waitAppCompletion=false",
        ),
        fake,
    )
    assert "(spark.kubernetes.authenticate.submission.oauthToken,*********(redacted))" in result.err
    assert "(spark.kubernetes.authenticate.driver.oauthToken,*********(redacted))" in result.err
    assert "s3cret" not in result.err and "TOPSECRET" not in result.err + result.out
    assert "(spark.submit.deployMode,cluster)" in result.err


def test_a_driver_pod_name_in_use_is_refused_and_the_existing_pod_kept() -> None:
    fake = FakeKubernetes()
    fake.create(
        PODS,
        "default",
        {"metadata": {"name": "taken"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
    )
    result = cli(submit("--conf", "spark.kubernetes.driver.pod.name=taken"), fake)
    assert result.code == 2
    assert "cannot create pods in namespace default" in result.err
    assert "Choose another name (e.g. spark.kubernetes.driver.pod.name)" in result.err
    assert [p["metadata"]["name"] for p in fake.objects(PODS)] == ["taken"]
    assert fake.objects(SERVICES) == []


def test_ctrl_c_while_waiting_leaves_the_application_running() -> None:
    fake = FakeKubernetes()

    def interrupt() -> None:
        raise KeyboardInterrupt

    result = cli(submit(), OnWatch(fake, interrupt))
    assert result.code == 130
    assert "Stopped watching; the application keeps running" in result.err
    assert len(fake.objects(PODS)) == 1


def test_losing_the_watch_permission_while_waiting_is_reported() -> None:
    fake = FakeKubernetes()
    fake.fail_next("watch", PODS, status=403, count=1, message="no watching")
    result = cli(submit(), fake)
    assert result.code == 1  # not a usage error: the application was submitted
    assert "missing permission: watch pods in namespace default (no watching)" in result.err


def test_warnings_about_ignored_properties_are_printed() -> None:
    fake = FakeKubernetes()
    result = cli(
        submit("--conf", "hadoop.x=1", "--conf", "spark.kubernetes.submission.waitAppCompletion=false"), fake
    )
    assert "k8s-backend: warning: Ignoring non-Spark config property: hadoop.x" in result.err
