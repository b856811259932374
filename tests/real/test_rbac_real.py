"""RBAC on a real control plane: examples/kubernetes/driver-rbac.yaml is enough for the backend
(allocation, replacement, cleanup) with nothing but a TokenRequest token of its ``spark-driver``
ServiceAccount; an account without a binding, another namespace's account and a bad token are refused
with the messages the CLI promises."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from backend_real_support import (
    DRIVER_URL,
    all_pods,
    apply_rbac,
    backend_conf,
    client_props,
    executors,
    https,
    make_namespace,
    running,
    settled,
    sleeper_template,
    token_for,
    until,
)

from k8s_backend import KubernetesClusterSchedulerBackend, KubernetesConf
from k8s_backend.cli.common.cluster_api import official_connector
from k8s_backend.cli.common.submit_args import parse_submit_args
from k8s_backend.cli.submit.client_mode import check_cluster
from k8s_backend.cli.submit.submission import build_submission
from k8s_backend.kube.client import OfficialKubernetesApi
from k8s_backend.kube.port import CONFIG_MAPS, LEASES, PODS, SECRETS, ForbiddenError
from k8s_backend.local.control_plane import ControlPlaneBinaries
from k8s_backend.local.kubelet import Node
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.real, pytest.mark.timeout(1200)]

TEAM, OTHER, BARE = "rbac-team", "rbac-other", "rbac-bare"


@pytest.fixture(scope="module")
def cluster(binaries: ControlPlaneBinaries) -> Iterator[LocalCluster]:
    nodes = [Node.of("node-1", cpu="16", memory="32Gi")]
    with LocalCluster(control_plane="kubernetes", run_processes=False, nodes=nodes) as local:
        for namespace in (TEAM, OTHER, BARE):
            make_namespace(local, namespace)
        apply_rbac(local, TEAM)
        apply_rbac(local, OTHER)
        code, body = https(local, "POST", f"/api/v1/namespaces/{BARE}/serviceaccounts",
                           {"metadata": {"name": "unbound"}})  # fmt: skip
        assert code == 201, body
        yield local


def api_with(props: dict[str, str], home: Path) -> OfficialKubernetesApi:
    # An environment without any kubeconfig or service account: the token in props is all there is.
    conf = KubernetesConf.from_spark_conf(props)
    return OfficialKubernetesApi.from_conf(
        conf.api, namespace_default=conf.namespace, environ={"HOME": str(home)}
    )


def driver_role_backend(
    cluster: LocalCluster, app: str, instances: int, home: Path, **conf: str
) -> tuple[OfficialKubernetesApi, KubernetesClusterSchedulerBackend]:
    """A backend of ``app`` in TEAM with nothing but the driver account's token (and its client)."""
    props = {
        **backend_conf(app, instances, sleeper_template(home)),
        **client_props(cluster, TEAM, token_for(cluster, TEAM, "spark-driver")),
        **conf,
    }
    api = api_with(props, home)
    return api, KubernetesClusterSchedulerBackend.create(props, app_id=app, driver_url=DRIVER_URL, api=api)


def forbidden_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The backend's log lines about a request the server refused (403)."""
    return [r.getMessage() for r in caplog.records if "forbidden" in r.getMessage().lower()]


def test_the_driver_role_is_enough_for_allocation_replacement_and_cleanup(
    cluster: LocalCluster, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app, admin = "spark-rbac-driver", cluster.api(TEAM)
    api, backend = driver_role_backend(
        cluster,
        app,
        3,
        tmp_path,
        **{"spark.authenticate": "true", "spark.authenticate.secret": "s3cret"},  # the executors' secret too
    )
    with caplog.at_level(logging.WARNING, logger="k8s_backend"):
        backend.start()
        try:
            until(lambda: running(admin, app, 3, TEAM) and settled(backend, 3), "3 executors Running")
            assert admin.get(LEASES, TEAM, f"{app}-driver-heartbeat")["spec"]["holderIdentity"]
            assert admin.list(SECRETS, TEAM, label_selector=f"spark-app-selector={app}").items
            admin.delete(PODS, TEAM, executors(admin, app, TEAM)["1"]["metadata"]["name"])
            until(lambda: running(admin, app, 3, TEAM) and "4" in executors(admin, app, TEAM), "replaced")
            backend.request_total_executors({0: 2})
            backend.kill_executors(["4"])
            until(
                lambda: running(admin, app, 2, TEAM) and len(all_pods(admin, app, TEAM)) == 2, "scaled down"
            )
        finally:
            backend.stop()
    until(lambda: all_pods(admin, app, TEAM) == [], "no pod left after stop()")
    selector = f"spark-app-selector={app}"
    # Owned by the heartbeat Lease, the executor ConfigMap goes with it, through the real garbage collector.
    until(lambda: admin.list(CONFIG_MAPS, TEAM, label_selector=selector).items == [], "ConfigMap collected")
    assert admin.list(SECRETS, TEAM, label_selector=selector).items == []
    assert [lease["metadata"]["name"] for lease in admin.list(LEASES, TEAM).items] == []
    messages = forbidden_lines(caplog)
    # Nodes are read with the optional ClusterRole (examples/kubernetes/driver-nodes-rbac.yaml): without
    # it, one warning, and decommission on notice goes on with the pods' DisruptionTarget condition.
    nodes = [m for m in messages if m.startswith("Cannot read nodes")]
    assert len(nodes) == 1 and "driver-nodes-rbac.yaml" in nodes[0], messages
    assert [m for m in messages if m not in nodes] == [], messages
    api.close()


def test_the_driver_role_may_orphan_its_lease_s_dependents_when_executors_are_kept(
    cluster: LocalCluster, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With deleteOnTermination=false the Lease is deleted with propagationPolicy Orphan: the Role's
    ``delete`` on leases is all it takes (the server adds the finalizer, the collector does the rest)."""
    app, admin = "spark-rbac-kept", cluster.api(TEAM)
    api, backend = driver_role_backend(
        cluster, app, 1, tmp_path, **{"spark.kubernetes.executor.deleteOnTermination": "false"}
    )
    with caplog.at_level(logging.WARNING, logger="k8s_backend"):
        backend.start()
        try:
            until(lambda: running(admin, app, 1, TEAM) and settled(backend, 1), "1 executor Running")
        finally:
            backend.stop()
    until(lambda: admin.list(LEASES, TEAM).items == [], "the Lease deleted")
    assert len(all_pods(admin, app, TEAM)) == 1  # kept, as asked
    messages = forbidden_lines(caplog)
    assert [m for m in messages if not m.startswith("Cannot read nodes")] == [], messages
    selector = f"spark-app-selector={app}"
    admin.delete_collection(PODS, TEAM, label_selector=selector)
    admin.delete_collection(CONFIG_MAPS, TEAM, label_selector=selector)
    until(lambda: all_pods(admin, app, TEAM) == [], "the kept executor deleted by the test")
    api.close()


def test_the_driver_token_passes_the_client_mode_submit_checks(cluster: LocalCluster, tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text("print('hello')\n", encoding="utf-8")
    props = client_props(cluster, TEAM, token_for(cluster, TEAM, "spark-driver"))
    argv = [
        item for key, value in props.items() if key != "spark.master" for item in ("--conf", f"{key}={value}")
    ]
    image = "spark.kubernetes.container.image=spark:4.3.0"
    args = parse_submit_args(
        [
            "--master",
            props["spark.master"],
            "--conf",
            image,
            "--conf",
            "spark.authenticate=true",
            *argv,
            str(app),
        ]
    )
    # Every access review of a client-mode submit (pods, configmaps, secrets, the heartbeat Lease) passes.
    check_cluster(build_submission(args, {}), official_connector(environ={"HOME": str(tmp_path)}))


def submit(
    cluster: LocalCluster, tmp_path: Path, namespace: str, token: str
) -> subprocess.CompletedProcess[str]:
    """``k8s-backend submit`` (client mode) of a tiny application with ``token`` as the only credential."""
    app = tmp_path / "app.py"
    app.write_text("print('hello')\n", encoding="utf-8")
    script = shutil.which("k8s-backend")
    command = [script] if script else [sys.executable, "-m", "k8s_backend.cli.main"]
    conf: list[str] = ["--conf", "spark.kubernetes.container.image=spark:4.3.0"]
    for key, value in client_props(cluster, namespace, token).items():
        if key != "spark.master":
            conf += ["--conf", f"{key}={value}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env["HOME"] = str(tmp_path)  # no ~/.kube/config of the user's
    return subprocess.run(
        [*command, "submit", "--master", f"pyk8s://{cluster.url}", *conf, str(app)],
        capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path, env=env,
    )  # fmt: skip


def test_submit_with_an_unbound_account_exits_2_naming_the_missing_permission(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    done = submit(cluster, tmp_path, BARE, token_for(cluster, BARE, "unbound"))
    assert done.returncode == 2, done.stderr
    assert f"missing permission: list pods in namespace {BARE}" in done.stderr, done.stderr
    assert f"kubectl auth can-i list pods -n {BARE}" in done.stderr
    assert "hello" not in done.stdout


def test_submit_with_a_bad_token_exits_2_with_the_401_message(cluster: LocalCluster, tmp_path: Path) -> None:
    done = submit(cluster, tmp_path, TEAM, "not-a-token")
    assert done.returncode == 2, done.stderr
    assert f"the Kubernetes API at {cluster.url} rejected the credentials (401 Unauthorized" in done.stderr
    assert "oauthToken" in done.stderr


def test_another_namespaces_driver_account_cannot_touch_this_namespace(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    other = api_with(client_props(cluster, OTHER, token_for(cluster, OTHER, "spark-driver")), tmp_path)
    try:
        assert other.list(PODS, OTHER).items == []  # its own namespace: allowed
        pod = {"metadata": {"name": "intruder"},
               "spec": {"containers": [{"name": "c", "image": "spark:4.3.0"}]}}  # fmt: skip
        cluster.api(TEAM).create(PODS, TEAM, {**pod, "metadata": {"name": "victim"}})
        attempts = {
            "list pods": lambda: other.list(PODS, TEAM),
            "get pods": lambda: other.get(PODS, TEAM, "victim"),
            "create pods": lambda: other.create(PODS, TEAM, pod),
            "delete pods": lambda: other.delete(PODS, TEAM, "victim"),
            "deletecollection pods": lambda: other.delete_collection(PODS, TEAM, label_selector=""),
            "create configmaps": lambda: other.create(CONFIG_MAPS, TEAM, {"metadata": {"name": "x"}}),
            "patch leases": lambda: other.patch(LEASES, TEAM, "x", {"spec": {}}),
        }
        for what, attempt in attempts.items():
            with pytest.raises(ForbiddenError) as refused:
                attempt()
            assert f"system:serviceaccount:{OTHER}:spark-driver" in str(refused.value), what
        assert cluster.api(TEAM).get(PODS, TEAM, "victim")["metadata"]["name"] == "victim"
    finally:
        other.close()
        cluster.api(TEAM).delete(PODS, TEAM, "victim", grace_period_seconds=0)
