"""``k8s-backend gc``: leftovers of gone drivers are deleted; nothing of a live application ever is."""

from __future__ import annotations

from typing import Any

from cli_support import cli

from k8s_backend.kube.labels import DRIVER_POD_ANNOTATION
from k8s_backend.kube.port import CONFIG_MAPS, PODS, PVCS, SECRETS, SERVICES, Resource
from k8s_backend.testing import FakeKubernetes

Obj = dict[str, Any]
M = ["--master", "pyk8s://https://k8s.test:6443"]
GONE, ALIVE, CLIENT, TEMPLATE = ("spark-" + c * 32 for c in "abcd")


def meta(
    name: str, app_id: str, role: str, owner: tuple[str, str] | None = None, note: str | None = None
) -> Obj:
    body: Obj = {"name": name, "labels": {"spark-app-selector": app_id, "spark-role": role}}
    if owner is not None:
        body["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner[0], "uid": owner[1]}]
    if note is not None:
        body["annotations"] = {DRIVER_POD_ANNOTATION: note}
    return body


def add(fake: FakeKubernetes, resource: Resource, metadata: Obj, phase: str | None = None) -> Obj:
    bodies: dict[str, Obj] = {
        "pods": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
        "services": {"spec": {"clusterIP": "None"}},
        "configmaps": {"data": {}},
        "secrets": {"data": {"auth-secret": "czNjcjN0"}},
        "persistentvolumeclaims": {
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
        },
    }
    obj = fake.create(resource, "default", {"metadata": metadata, **bodies[resource.plural]})
    if phase is not None:
        obj = fake.patch_status(resource, "default", metadata["name"], {"phase": phase})
    return obj


def names(fake: FakeKubernetes) -> set[str]:
    kinds = (PODS, SERVICES, CONFIG_MAPS, SECRETS, PVCS)
    return {o["metadata"]["name"] for r in kinds for o in fake.objects(r)}


def scenario() -> FakeKubernetes:
    fake = FakeKubernetes()
    # An application whose driver pod was deleted while its objects stayed (dangling owner references).
    add(fake, PODS, meta("gone-exec-1", GONE, "executor", ("gone-driver", "uid-gone")), "Running")
    add(fake, SERVICES, meta("gone-driver-svc", GONE, "driver", ("gone-driver", "uid-gone")))
    add(fake, CONFIG_MAPS, meta("spark-exec-gone-conf-map", GONE, "executor", ("gone-driver", "uid-gone")))
    add(fake, PVCS, meta("gone-exec-1-pvc-0", GONE, "executor", ("gone-driver", "uid-gone")))
    # A running cluster-mode application.
    driver = add(fake, PODS, meta("alive-driver", ALIVE, "driver"), "Running")
    add(
        fake,
        PODS,
        meta("alive-exec-1", ALIVE, "executor", ("alive-driver", driver["metadata"]["uid"])),
        "Running",
    )
    add(fake, CONFIG_MAPS, meta("alive-conf", ALIVE, "executor", ("alive-driver", driver["metadata"]["uid"])))
    # A client-mode application: no driver pod anywhere, one executor still running.
    add(fake, PODS, meta("client-exec-1", CLIENT, "executor"), "Running")
    add(fake, CONFIG_MAPS, meta("client-conf", CLIENT, "executor"))
    return fake


def test_leftovers_of_a_gone_driver_are_deleted_and_live_apps_are_kept() -> None:
    fake = scenario()
    result = cli(["gc", *M], fake)
    assert result.code == 0, result.err
    assert names(fake) == {"alive-driver", "alive-exec-1", "alive-conf", "client-exec-1", "client-conf"}
    assert f"application {GONE} in default: its driver pod gone-driver is gone" in result.err
    assert f"keep application {ALIVE} in default: its driver pod alive-driver exists" in result.err
    assert f"keep application {CLIENT} in default: no driver pod is known (client mode?)" in result.err
    assert "deleted pod default/gone-exec-1" in result.out
    assert "deleted persistentvolumeclaim default/gone-exec-1-pvc-0" in result.out
    assert "gc: 4 objects deleted" in result.err


def test_dry_run_deletes_nothing() -> None:
    fake = scenario()
    before = names(fake)
    result = cli(["gc", *M, "--dry-run"], fake)
    assert names(fake) == before
    assert "would delete service default/gone-driver-svc" in result.out
    assert "4 objects would be deleted" in result.err


def test_a_new_pod_with_the_old_name_does_not_keep_leftovers_alive() -> None:
    fake = scenario()
    add(fake, PODS, meta("gone-driver", "spark-" + "e" * 32, "driver"), "Running")  # same name, new app
    cli(["gc", *M], fake)
    assert "gone-exec-1" not in names(fake)
    assert "gone-driver" in names(fake)


def test_the_annotation_names_the_driver_when_owner_references_were_removed() -> None:
    fake = FakeKubernetes()
    add(fake, PODS, meta("orphan-exec-1", TEMPLATE, "executor", note="orphan-driver"), "Running")
    add(fake, CONFIG_MAPS, meta("orphan-conf", TEMPLATE, "executor"))  # no trace itself: same application
    cli(["gc", *M], fake)
    assert names(fake) == set()


def test_an_annotated_driver_that_still_exists_keeps_its_application() -> None:
    fake = FakeKubernetes()
    add(fake, PODS, meta("x-driver", TEMPLATE, "driver"), "Succeeded")
    add(fake, PODS, meta("x-exec-1", TEMPLATE, "executor", note="x-driver"), "Failed")
    cli(["gc", *M, "-l", "spark-role=executor"], fake)  # the driver is not even among the candidates
    assert names(fake) == {"x-driver", "x-exec-1"}


def test_a_client_mode_driver_in_a_pod_that_exists_is_alive() -> None:
    fake = FakeKubernetes()
    notebook = fake.create(
        PODS,
        "default",
        {"metadata": {"name": "jupyter"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
    )
    owner = ("jupyter", notebook["metadata"]["uid"])
    add(fake, PODS, meta("nb-exec-1", CLIENT, "executor", owner), "Running")
    cli(["gc", *M, "--all-orphans"], fake)
    assert "nb-exec-1" in names(fake)
    fake.delete(PODS, "default", "jupyter")  # the fake collects dependents: recreate the dangling state
    add(fake, PODS, meta("nb-exec-2", CLIENT, "executor", owner), "Running")
    cli(["gc", *M], fake)
    assert "nb-exec-2" not in names(fake)


def test_all_orphans_deletes_client_mode_leftovers_but_never_running_executors() -> None:
    fake = scenario()
    cli(["gc", *M, "--all-orphans"], fake)
    assert {"client-exec-1", "client-conf"} <= names(fake)  # an executor still runs
    fake.patch_status(PODS, "default", "client-exec-1", {"phase": "Failed"})
    result = cli(["gc", *M, "--all-orphans"], fake)
    assert not {"client-exec-1", "client-conf"} & names(fake)
    assert "no driver pod is known and no executor runs (--all-orphans)" in result.err


def test_objects_already_being_deleted_are_left_alone() -> None:
    fake = FakeKubernetes(graceful_pod_deletion=True)
    add(fake, PODS, meta("g-exec-1", GONE, "executor", ("g-driver", "uid-x")), "Running")
    fake.delete(PODS, "default", "g-exec-1", grace_period_seconds=30)
    fake.reset_calls()
    cli(["gc", *M], fake)
    assert fake.calls_of("delete") == []


def test_gc_checks_delete_permissions_unless_it_is_a_dry_run() -> None:
    from cli_support import AccessReviews

    fake = scenario()
    before = names(fake)
    result = cli(["gc", *M], AccessReviews(fake, denied={("delete", "persistentvolumeclaims")}))
    assert result.code == 2
    assert "missing permission: delete persistentvolumeclaims in namespace default" in result.err
    assert names(fake) == before
    assert cli(["gc", *M, "--dry-run"], AccessReviews(fake, denied={("delete", "pods")})).code == 0


# --- client mode with a heartbeat Lease (k8s_backend.backend.heartbeat) -----------------------------------

NOW = 1_800_000_000.0
DEAD, LIVE = "spark-" + "7" * 32, "spark-" + "8" * 32


def heartbeat_app(fake: FakeKubernetes, app_id: str, *, renewed: float | None) -> None:
    """A client-mode application whose objects name its heartbeat Lease (None: the Lease is gone)."""
    from k8s_backend.kube.labels import HEARTBEAT_LEASE_ANNOTATION
    from k8s_backend.kube.leases import heartbeat_lease, heartbeat_lease_name
    from k8s_backend.kube.port import LEASES

    lease = heartbeat_lease_name(app_id)
    short = app_id[-3:]
    for name, phase in ((f"{short}-exec-1", "Running"), (f"{short}-exec-2", None)):  # exec-2 stays Pending
        body = meta(name, app_id, "executor")
        body["annotations"] = {HEARTBEAT_LEASE_ANNOTATION: lease}
        add(fake, PODS, body, phase)
    conf = meta(f"{short}-conf", app_id, "executor")
    conf["annotations"] = {HEARTBEAT_LEASE_ANNOTATION: lease}
    add(fake, CONFIG_MAPS, conf)
    secret = meta(f"{short}-auth-secret", app_id, "executor")  # the executors' RPC auth secret
    secret["annotations"] = {HEARTBEAT_LEASE_ANNOTATION: lease}
    add(fake, SECRETS, secret)
    if renewed is not None:
        body = heartbeat_lease(lease, "default", app_id, holder="h/1", duration=60, now=renewed)
        fake.create(LEASES, "default", body)


def all_names(fake: FakeKubernetes) -> set[str]:
    from k8s_backend.kube.port import LEASES

    return names(fake) | {o["metadata"]["name"] for o in fake.objects(LEASES)}


def test_an_expired_heartbeat_deletes_everything_pending_pods_included_and_a_fresh_one_keeps_it() -> None:
    fake = FakeKubernetes()
    heartbeat_app(fake, DEAD, renewed=NOW - 360)  # expired 5m ago (60 s lease)
    heartbeat_app(fake, LIVE, renewed=NOW - 10)
    result = cli(["gc", *M], fake, wall_clock=lambda: NOW)
    assert result.code == 0, result.err
    kept = {"888-exec-1", "888-exec-2", "888-conf", "888-auth-secret", f"{LIVE}-driver-heartbeat"}
    assert all_names(fake) == kept
    assert f"application {DEAD} in default: its driver's heartbeat expired 5m ago" in result.err
    assert f"keep application {LIVE} in default: its driver's heartbeat is fresh" in result.err
    assert "deleted pod default/777-exec-2" in result.out
    assert f"deleted lease default/{DEAD}-driver-heartbeat" in result.out
    assert "deleted secret default/777-auth-secret" in result.out
    assert "gc: 5 objects deleted" in result.err


def test_a_lease_just_past_its_duration_is_kept_within_the_clock_skew_allowance() -> None:
    fake = FakeKubernetes()
    heartbeat_app(fake, DEAD, renewed=NOW - 61)
    cli(["gc", *M], fake, wall_clock=lambda: NOW)
    assert "777-exec-2" in all_names(fake)


def test_dry_run_says_why_it_would_delete_an_expired_heartbeats_application() -> None:
    fake = FakeKubernetes()
    heartbeat_app(fake, DEAD, renewed=NOW - 360)
    before = all_names(fake)
    result = cli(["gc", *M, "--dry-run"], fake, wall_clock=lambda: NOW)
    assert all_names(fake) == before
    assert f"application {DEAD} in default: its driver's heartbeat expired 5m ago" in result.err
    assert "would delete pod default/777-exec-2" in result.out
    assert "5 objects would be deleted" in result.err


def test_objects_naming_a_lease_that_is_gone_are_deleted() -> None:
    fake = FakeKubernetes()
    heartbeat_app(fake, DEAD, renewed=None)
    result = cli(["gc", *M], fake, wall_clock=lambda: NOW)
    assert all_names(fake) == set()
    assert f"its driver's heartbeat lease {DEAD}-driver-heartbeat is gone" in result.err


def test_young_objects_naming_a_lease_not_created_yet_are_kept() -> None:
    fake = FakeKubernetes()
    heartbeat_app(fake, DEAD, renewed=None)
    result = cli(["gc", *M], fake, wall_clock=lambda: fake.clock.now() + 5)  # objects 5 s old
    assert "777-exec-1" in all_names(fake)
    assert "does not exist yet" in result.err


def test_a_selector_does_not_hide_a_fresh_lease() -> None:
    fake = FakeKubernetes()
    heartbeat_app(fake, LIVE, renewed=NOW - 10)
    cli(["gc", *M, "-l", "spark-role=executor"], fake, wall_clock=lambda: NOW)  # the Lease has no role
    assert "888-exec-2" in all_names(fake)
