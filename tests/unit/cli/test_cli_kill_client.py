"""``k8s-backend kill APP_ID`` of a client-mode application: what its driver's stop() would delete."""

from __future__ import annotations

from typing import Any

from cli_support import AccessReviews, cli

from k8s_backend.kube.labels import HEARTBEAT_LEASE_ANNOTATION
from k8s_backend.kube.leases import heartbeat_lease, heartbeat_lease_name
from k8s_backend.kube.port import CONFIG_MAPS, LEASES, PODS, SECRETS
from k8s_backend.testing import FakeKubernetes

Obj = dict[str, Any]
M = ["--master", "pyk8s://https://k8s.test:6443"]
APP, OTHER = "spark-" + "5" * 32, "spark-" + "6" * 32
NOW = 1_800_000_000.0
LEASE = heartbeat_lease_name(APP)


def executor(fake: FakeKubernetes, name: str, app_id: str, phase: str | None = None) -> None:
    meta: Obj = {
        "name": name,
        "labels": {"spark-app-selector": app_id, "spark-role": "executor"},
        "annotations": {HEARTBEAT_LEASE_ANNOTATION: heartbeat_lease_name(app_id)},
    }
    fake.create(PODS, "default", {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    if phase is not None:
        fake.patch_status(PODS, "default", name, {"phase": phase})


def client_app(fake: FakeKubernetes, app_id: str, *, renewed: float) -> None:
    executor(fake, f"{app_id[-4:]}-exec-1", app_id, "Running")
    executor(fake, f"{app_id[-4:]}-exec-2", app_id)  # Pending
    labels = {"spark-app-selector": app_id, "spark-role": "executor"}
    fake.create(CONFIG_MAPS, "default", {"metadata": {"name": f"{app_id[-4:]}-conf", "labels": labels}})
    secret = {"metadata": {"name": f"{app_id[-4:]}-auth-secret", "labels": labels}, "data": {}}
    fake.create(SECRETS, "default", secret)
    lease = heartbeat_lease(
        heartbeat_lease_name(app_id), "default", app_id, holder="laptop/42", duration=60, now=renewed
    )
    fake.create(LEASES, "default", lease)


def names(fake: FakeKubernetes) -> set[str]:
    return {o["metadata"]["name"] for r in (PODS, CONFIG_MAPS, SECRETS, LEASES) for o in fake.objects(r)}


def test_kill_deletes_the_executors_config_maps_and_lease_of_a_dead_client_mode_driver() -> None:
    fake = FakeKubernetes()
    client_app(fake, APP, renewed=NOW - 600)
    client_app(fake, OTHER, renewed=NOW)
    result = cli(["kill", *M, APP], fake, wall_clock=lambda: NOW)
    assert result.code == 0, result.err
    kept = {"6666-exec-1", "6666-exec-2", "6666-conf", "6666-auth-secret", heartbeat_lease_name(OTHER)}
    assert names(fake) == kept
    assert f"Deleted the executor pods of client-mode application {APP} in default" in result.err
    assert "Deleted its executor ConfigMaps" in result.err
    assert "Deleted its executor Secrets" in result.err
    assert f"Deleted its driver's heartbeat lease default/{LEASE}" in result.err
    assert "All pods of the application are gone" in result.err
    assert "still renewed its heartbeat" not in result.err


def test_kill_warns_that_a_live_client_mode_driver_may_create_new_executors() -> None:
    fake = FakeKubernetes()
    client_app(fake, APP, renewed=NOW - 5)
    result = cli(["kill", *M, APP], fake, wall_clock=lambda: NOW)
    assert result.code == 0, result.err
    assert names(fake) == set()
    assert "still renewed its heartbeat: if it still runs, it will create new executors" in result.err


def test_kill_finds_a_client_mode_application_by_its_lease_alone() -> None:
    fake = FakeKubernetes()
    lease = heartbeat_lease(LEASE, "default", APP, holder="laptop/42", duration=60, now=NOW - 600)
    fake.create(LEASES, "default", lease)
    result = cli(["kill", *M, APP], fake, wall_clock=lambda: NOW)
    assert result.code == 0, result.err
    assert names(fake) == set()


def test_kill_of_a_client_mode_application_checks_the_lease_permission() -> None:
    fake = FakeKubernetes()
    client_app(fake, APP, renewed=NOW - 600)
    before = names(fake)
    reviews = AccessReviews(fake, denied={("delete", "leases")})
    result = cli(["kill", *M, APP], reviews, wall_clock=lambda: NOW)
    assert result.code == 2
    assert "missing permission: delete leases in namespace default" in result.err
    assert names(fake) == before
