"""examples/kubernetes/driver-rbac.yaml grants exactly what a driver needs: every API call the backend
makes (recorded on the fake while a client-mode and a cluster-mode backend go through allocation,
failures, decommissioning, scale-down, heartbeat renewals and stop, with every feature that calls the API
turned on) and every access review of a client-mode ``k8s-backend submit``, and nothing more.

(The real control plane's side, tests/real/test_rbac_real.py, shows that the Role is enough there.)"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from backend_harness import BASE_CONF, RecordingDriver, create_backend
from repo import REPO_ROOT

from k8s_backend.allocation.quota_watch import LIMIT_RANGES, RESOURCE_QUOTAS
from k8s_backend.cli.common.submit_args import parse_submit_args
from k8s_backend.cli.submit.client_mode import client_needs
from k8s_backend.cli.submit.submission import build_submission
from k8s_backend.common import DeterministicScheduler, ManualClock
from k8s_backend.kube.port import CONFIG_MAPS, LEASES, NODES, POD_GROUPS, PODS, PVCS, SECRETS, SERVICES
from k8s_backend.testing import FakeKubernetes

RBAC_FILE = REPO_ROOT / "examples" / "kubernetes" / "driver-rbac.yaml"
NODES_RBAC_FILE = REPO_ROOT / "examples" / "kubernetes" / "driver-nodes-rbac.yaml"
GROUP_OF = {
    r.plural: r.group
    for r in (
        PODS,
        CONFIG_MAPS,
        SECRETS,
        SERVICES,
        PVCS,
        POD_GROUPS,
        LEASES,
        NODES,
        RESOURCE_QUOTAS,
        LIMIT_RANGES,
    )
}
CLUSTER_SCOPED = {NODES.plural}  # granted by the optional ClusterRole, not by the Role
RBAC_VERB = {"delete_collection": "deletecollection"}  # the port's verb names are RBAC's otherwise
PVC = "spark.kubernetes.executor.volumes.persistentVolumeClaim.data."
EVERY_FEATURE = {
    "spark.authenticate": "true",  # the executors' secret
    "spark.authenticate.secret": "s3cret",
    "spark.kubernetes.scheduler.name": "volcano",  # a PodGroup
    "spark.kubernetes.executor.decommissionLabel": "decommissioning",
    PVC + "mount.path": "/data",
    PVC + "options.claimName": "OnDemand",
    PVC + "options.storageClass": "fast",
    PVC + "options.sizeLimit": "1Gi",
}
Permission = tuple[str, str, str]  # (API group, resource, verb)


def role_rules() -> set[Permission]:
    documents = list(yaml.safe_load_all(RBAC_FILE.read_text(encoding="utf-8")))
    assert [d["kind"] for d in documents] == ["ServiceAccount", "Role", "RoleBinding"]
    assert not any("namespace" in d["metadata"] for d in documents), "kubectl apply -n NS decides"
    granted: set[Permission] = set()
    for rule in documents[1]["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted |= {(group, resource, verb) for verb in rule["verbs"]}
    return granted


def cluster_role_rules() -> set[Permission]:
    documents = list(yaml.safe_load_all(NODES_RBAC_FILE.read_text(encoding="utf-8")))
    assert [d["kind"] for d in documents] == ["ClusterRole"]
    granted: set[Permission] = set()
    for rule in documents[0]["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted |= {(group, resource, verb) for verb in rule["verbs"]}
    return granted


def recorded(fake: FakeKubernetes) -> set[Permission]:
    return {
        (GROUP_OF[c.resource_plural], c.resource_plural, RBAC_VERB.get(c.verb, c.verb)) for c in fake.calls
    }


def run_backend(fake: FakeKubernetes, scheduler: DeterministicScheduler, conf: dict[str, str]) -> None:
    """Allocation, decommissioned, failed and killed executors, heartbeat renewals, a scale-down, stop."""
    # A quota with room, so quota-aware allocation reads the LimitRanges too.
    quota = {"metadata": {"name": "room"}, "spec": {"hard": {"pods": "100"}}}
    fake.create(RESOURCE_QUOTAS, "default", quota)
    fake.patch_status(RESOURCE_QUOTAS, "default", "room", {"hard": {"pods": "100"}, "used": {"pods": "0"}})
    fake.reset_calls()
    backend = create_backend(
        {**BASE_CONF, **conf}, api=fake, driver=RecordingDriver(), clock=scheduler.clock, scheduler=scheduler
    )
    backend.start()
    scheduler.advance(10.0)  # a few allocation rounds (a conflicting create costs one)
    names = sorted(p["metadata"]["name"] for p in executor_pods(fake))
    assert len(names) == 3, names
    for name in names:
        fake.patch_status(PODS, "default", name, {"phase": "Running"})
    scheduler.advance(60.0)  # heartbeat renewals
    backend.decommission_executors(["1"])
    terminated = {"name": "spark-kubernetes-executor", "state": {"terminated": {"exitCode": 1}}}
    fake.patch_status(PODS, "default", names[1], {"phase": "Failed", "containerStatuses": [terminated]})
    scheduler.advance(5.0)  # deleted and replaced
    backend.request_total_executors({0: 1})
    backend.kill_executors(["3"])  # what Spark's allocation manager does after lowering the target
    scheduler.advance(60.0)  # the pending replacement is excess; the killed one is force-deleted
    backend.stop()
    scheduler.run_until_idle()


def executor_pods(fake: FakeKubernetes) -> Iterable[Any]:
    return [
        p
        for p in fake.objects(PODS, "default")
        if (p["metadata"].get("labels") or {}).get("spark-role") == "executor"
    ]


def backend_calls() -> set[Permission]:
    found: set[Permission] = set()
    # Client mode: no driver pod, a heartbeat Lease.
    clock = ManualClock(1_700_000_000.0)
    fake = FakeKubernetes(clock=clock, watch_blocking=False)
    run_backend(fake, DeterministicScheduler(clock), EVERY_FEATURE)
    found |= recorded(fake)
    # Cluster mode: a driver pod (owner of everything, its claims reused), and creates that conflict,
    # which the backend answers by reading the object back.
    clock = ManualClock(1_700_000_000.0)
    fake = FakeKubernetes(clock=clock, watch_blocking=False)
    driver = {"metadata": {"name": "driver"}, "spec": {"containers": [{"name": "c", "image": "spark:4.3.0"}]}}
    fake.create(PODS, "default", driver)
    fake.patch_status(PODS, "default", "driver", {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"}]})  # fmt: skip
    fake.fail_next("create", PODS, status=409)
    fake.fail_next("create", PVCS, status=409)
    fake.reset_calls()
    cluster_mode = {
        **EVERY_FEATURE,
        "spark.kubernetes.driver.pod.name": "driver",
        "spark.kubernetes.driver.reusePersistentVolumeClaim": "true",
    }
    run_backend(fake, DeterministicScheduler(clock), cluster_mode)
    found |= recorded(fake)
    return found


def submit_checks(tmp_path: Path) -> set[Permission]:
    app = tmp_path / "app.py"
    app.write_text("print(1)\n", encoding="utf-8")
    argv = ["--master", "pyk8s://https://10.0.0.1:6443"]
    for key, value in {"spark.kubernetes.container.image": "spark:4.3.0", **EVERY_FEATURE}.items():
        argv += ["--conf", f"{key}={value}"]
    sub = build_submission(parse_submit_args([*argv, str(app)]), {})
    return {(p.resource.group, p.resource.plural, p.verb) for p in client_needs(sub)}


def test_the_driver_role_grants_exactly_the_calls_the_backend_makes(tmp_path: Path) -> None:
    needed = backend_calls() | submit_checks(tmp_path)
    namespaced = {p for p in needed if p[1] not in CLUSTER_SCOPED}
    granted = role_rules()
    assert namespaced - granted == set(), "calls the Role does not allow"
    assert granted - namespaced == set(), "permissions the Role grants and nothing uses"
    # Nodes (decommission on notice) are read with the optional ClusterRole, exactly.
    assert needed - namespaced == cluster_role_rules() == {("", "nodes", "list")}


def test_every_feature_that_calls_the_api_was_exercised() -> None:
    # Without these the comparison above would pass with a Role missing the feature's rules.
    calls = backend_calls()
    for expected in [
        ("", "secrets", "create"),
        ("scheduling.volcano.sh", "podgroups", "create"),
        ("", "persistentvolumeclaims", "list"),
        ("", "persistentvolumeclaims", "get"),
        ("", "pods", "get"),
        ("", "pods", "patch"),
        ("coordination.k8s.io", "leases", "patch"),
        ("", "services", "deletecollection"),
        ("", "resourcequotas", "list"),
        ("", "limitranges", "list"),
        ("", "resourcequotas", "watch"),
        ("", "limitranges", "watch"),
    ]:
        assert expected in calls


def docs_page_rules() -> set[Permission]:
    """The rows of the driver's table on the Permissions page (docs/permissions.md)."""
    page = (RBAC_FILE.parents[2] / "docs" / "permissions.md").read_text(encoding="utf-8")
    section = page.split("# Permissions", 1)[1].split("**The commands**", 1)[0]
    listed: set[Permission] = set()
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        resource, _, group = cells[0].partition(" (")
        verbs = [verb.strip(" `") for verb in cells[1].split(",")]
        listed |= {(group.strip("`)"), resource.strip("`"), verb) for verb in verbs}
    return listed


def test_the_permissions_page_lists_the_same_permissions() -> None:
    assert docs_page_rules() == role_rules() | cluster_role_rules()
