"""``status``, ``kill``, ``list`` (and spark-submit's ``--status``/``--kill``) against a FakeKubernetes."""

from __future__ import annotations

from typing import Any

import pytest
from cli_support import Wrapped, cli

from k8s_backend.kube.port import NAMESPACES, PODS, Resource
from k8s_backend.pods.objects import owner_reference
from k8s_backend.testing import FakeKubernetes

Obj = dict[str, Any]
APP1, APP2, CLIENT_APP = "spark-" + "1" * 32, "spark-" + "2" * 32, "spark-" + "3" * 32
M = ["--master", "pyk8s://https://k8s.test:6443"]


def make_pod(
    fake: FakeKubernetes, name: str, app_id: str, role: str, owner: Obj | None = None, **kw: Any
) -> Obj:
    meta: Obj = {
        "name": name,
        "labels": {
            "spark-app-selector": app_id,
            "spark-role": role,
            "spark-app-name": kw.get("app_name", "pi"),
        },
    }
    if owner is not None:
        meta["ownerReferences"] = [owner_reference(owner)]
    pod = fake.create(
        PODS,
        kw.get("namespace", "default"),
        {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "i"}]}},
    )
    if "phase" in kw:
        pod = fake.patch_status(PODS, kw.get("namespace", "default"), name, {"phase": kw["phase"]})
    return pod


@pytest.fixture
def fake() -> FakeKubernetes:
    fake = FakeKubernetes()
    driver = make_pod(fake, "pi-abc-driver", APP1, "driver", phase="Running")
    make_pod(fake, "pi-abc-exec-1", APP1, "executor", driver, phase="Running")
    make_pod(fake, "pi-abc-exec-2", APP1, "executor", driver)
    make_pod(fake, "wordcount-driver", APP2, "driver", phase="Succeeded", app_name="wordcount")
    make_pod(fake, "notebook-exec-1", CLIENT_APP, "executor", phase="Running", app_name="notebook")
    return fake


@pytest.mark.parametrize("ref", ["default:pi-abc-driver", "pi-abc-driver", "default:pi-*", APP1])
def test_status_finds_an_application_by_submission_id_glob_or_app_id(fake: FakeKubernetes, ref: str) -> None:
    result = cli(["status", *M, ref], fake)
    assert result.code == 0, result.err
    assert "submission ID:  default:pi-abc-driver" in result.out
    assert f"application ID: {APP1}" in result.out
    assert "driver:         Running" in result.out
    assert "executors:      2 (1 Pending, 1 Running)" in result.out


def test_status_of_a_client_mode_application(fake: FakeKubernetes) -> None:
    result = cli(["status", *M, CLIENT_APP], fake)
    assert result.code == 0, result.err
    assert "client mode: the driver runs outside the cluster" in result.out
    assert "Application notebook" in result.out


def test_status_of_nothing_fails_with_a_message(fake: FakeKubernetes) -> None:
    result = cli(["status", *M, "other:pi-*"], fake)
    assert result.code == 1
    assert "no application matches 'other:pi-*' in namespace other" in result.err


def test_spark_submit_status_flag_is_the_status_command(fake: FakeKubernetes) -> None:
    result = cli(["submit", *M, "--status", "default:pi-abc-driver"], fake)
    assert result.code == 0, result.err
    assert f"application ID: {APP1}" in result.out


def test_list_shows_cluster_and_client_mode_applications(fake: FakeKubernetes) -> None:
    result = cli(["list", *M], fake)
    assert result.code == 0, result.err
    header, *rows = result.out.splitlines()
    assert header.split() == [
        "SUBMISSION", "ID", "APPLICATION", "ID", "NAME", "DRIVER", "EXECUTORS", "REGISTERED", "AGE"
    ]  # fmt: skip
    text = "\n".join(rows)
    assert "default:pi-abc-driver" in text and "2 (1 Pending, 1 Running)" in text
    assert "default:wordcount-driver" in text and "Succeeded" in text
    assert "(client mode)" in text and CLIENT_APP in text
    assert len(rows) == 3


def test_list_in_all_namespaces_and_with_a_selector(fake: FakeKubernetes) -> None:
    fake.create(NAMESPACES, None, {"metadata": {"name": "far"}})
    make_pod(fake, "far-driver", "spark-" + "9" * 32, "driver", namespace="far")
    assert "far:far-driver" not in cli(["list", *M], fake).out
    assert "far:far-driver" in cli(["list", *M, "-A"], fake).out
    only = cli(["list", *M, "-A", "-l", "spark-app-name=wordcount"], fake).out
    assert "wordcount-driver" in only and "pi-abc-driver" not in only


def test_kill_deletes_the_driver_and_executors_and_waits_until_they_are_gone(fake: FakeKubernetes) -> None:
    result = cli(["kill", *M, "default:pi-abc-driver"], fake)
    assert result.code == 0, result.err
    assert sorted(p["metadata"]["name"] for p in fake.objects(PODS)) == [
        "notebook-exec-1",
        "wordcount-driver",
    ]
    assert f"Deleted driver pod default/pi-abc-driver (application {APP1})" in result.err
    assert "All pods of the application are gone" in result.err


class RecordingDeletes(Wrapped):
    def __init__(self, api: FakeKubernetes) -> None:
        super().__init__(api)
        self.graces: list[int | None] = []

    def delete(self, resource: Resource, namespace: str | None, name: str, **kwargs: Any) -> None:
        self.graces.append(kwargs.get("grace_period_seconds"))
        self.inner.delete(resource, namespace, name, **kwargs)


def test_kill_takes_the_grace_period_from_the_flag_or_spark_key(fake: FakeKubernetes) -> None:
    api = RecordingDeletes(fake)
    key = "spark.kubernetes.appKillPodDeletionGracePeriod"
    assert cli(["kill", *M, "--conf", f"{key}=7s", "--no-wait", APP1], api).code == 0
    assert cli(["kill", *M, "--conf", f"{key}=7s", "--grace-period", "0", "wordcount-driver"], api).code == 0
    assert api.graces == [7, 0]
    bad = cli(["kill", *M, "--conf", f"{key}=soon", APP2], api)
    assert bad.code == 2
    assert f"{key}=soon is not a duration" in bad.err


def test_kill_reports_pods_that_do_not_go_away() -> None:
    fake = FakeKubernetes(graceful_pod_deletion=True)  # nothing finalizes the pods here
    make_pod(fake, "d", APP1, "driver", phase="Running")
    ticks = iter(range(100))
    result = cli(["kill", *M, "--timeout", "3", "d"], fake, clock=lambda: float(next(ticks)))
    assert result.code == 1
    assert "Still terminating after 3s: default/d" in result.err


def test_kill_of_a_client_mode_application_deletes_its_executors(fake: FakeKubernetes) -> None:
    result = cli(["kill", *M, CLIENT_APP], fake)
    assert result.code == 0, result.err
    assert "notebook-exec-1" not in [p["metadata"]["name"] for p in fake.objects(PODS)]
    assert f"Deleted the executor pods of client-mode application {CLIENT_APP}" in result.err
    assert "pi-abc-driver" in [p["metadata"]["name"] for p in fake.objects(PODS)]  # others untouched


def test_spark_submit_kill_flag_is_the_kill_command(fake: FakeKubernetes) -> None:
    assert cli(["submit", *M, "--kill", "default:pi-abc-*"], fake).code == 0
    assert "pi-abc-driver" not in [p["metadata"]["name"] for p in fake.objects(PODS)]


def test_a_bad_submission_id_is_a_usage_error(fake: FakeKubernetes) -> None:
    result = cli(["status", *M, "default:"], fake)
    assert result.code == 2
    assert "a submission id is NAMESPACE:DRIVER_POD" in result.err


def test_management_commands_refuse_the_embedded_local_cluster(fake: FakeKubernetes) -> None:
    result = cli(["list", "--master", "pyk8s://local"], fake)
    assert result.code == 2
    assert "start it with `k8s-backend local`" in result.err


def test_forbidden_lists_name_the_permission(fake: FakeKubernetes) -> None:
    fake.fail_next("list", PODS, status=403, count=1, message="no")
    result = cli(["list", *M, "-n", "team"], fake)
    assert result.code == 2
    assert "missing permission: list pods in namespace team" in result.err


def test_status_only_reads(fake: FakeKubernetes) -> None:
    fake.reset_calls()
    cli(["status", *M, APP1], fake)
    assert {c.verb for c in fake.calls} == {"list"}
