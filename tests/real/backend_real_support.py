"""Helpers for the backend's tests on a real control plane (tests/real/test_backend_real*.py and
tests/real/test_rbac_real*.py): executor pods that are real processes, waiting on conditions, crashing a
backend as a killed driver would, HTTPS requests with a given token. :func:`until` is the condition wait
of every test in tests/real."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml
from repo import REPO_ROOT

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.common import ThreadScheduler
from k8s_backend.kube.port import NAMESPACES, PODS, KubernetesApi
from k8s_backend.testing import LocalCluster

Obj = dict[str, Any]
DRIVER_URL = "spark://CoarseGrainedScheduler@127.0.0.1:7078"
DEADLINE = 120.0  # generous: a loaded 2-core machine runs the control plane, the kubelet and the tests
# What an executor container runs when the kubelet starts processes: no JVM (no driver to talk to), a
# process that lives until it is stopped or killed, as an executor does.
SLEEPER = "import time\nwhile True:\n    time.sleep(1)\n"
EXAMPLES = REPO_ROOT / "examples" / "kubernetes"


def until(
    predicate: Callable[[], object], what: str, timeout: float = DEADLINE, *, poll: float = 0.1
) -> None:
    """Wait for ``predicate`` to hold, checking every ``poll`` seconds; fail naming ``what`` after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f} s: {what}")
        time.sleep(poll)


def sleeper_template(directory: Path) -> Path:
    """An executor pod template whose container runs :data:`SLEEPER` with this Python."""
    path = directory / "executor-template.yaml"
    template = {
        "apiVersion": "v1",
        "kind": "Pod",
        # The name the backend looks for (spark.kubernetes.executor.podTemplateContainerName's default):
        # a container of another name would be built all the same, but not recognised as the executor's
        # (its exit code, recovery after a restart), as in Spark.
        "spec": {
            "containers": [{"name": "spark-kubernetes-executor", "command": [sys.executable, "-c", SLEEPER]}]
        },
    }
    path.write_text(yaml.safe_dump(template), encoding="utf-8")
    return path


def backend_conf(app: str, instances: int, template: Path, **extra: str) -> dict[str, str]:
    return {
        "spark.app.name": app,
        "spark.kubernetes.container.image": "spark:4.3.0",
        "spark.kubernetes.executor.podNamePrefix": app,
        "spark.kubernetes.executor.podTemplateFile": str(template),
        "spark.executor.instances": str(instances),
        "spark.executor.memory": "512m",
        "spark.kubernetes.allocation.batch.size": "5",
        "spark.kubernetes.allocation.batch.delay": "200ms",
        "spark.kubernetes.executor.eventProcessingInterval": "200ms",
        **extra,
    }


def executors(api: KubernetesApi, app: str, namespace: str = "default") -> dict[str, Obj]:
    """Executor id -> pod, for the executor pods of ``app`` that are not being deleted."""
    pods = api.list(PODS, namespace, label_selector=f"spark-app-selector={app},spark-role=executor").items
    return {
        p["metadata"]["labels"]["spark-exec-id"]: p
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
    }


def all_pods(api: KubernetesApi, app: str, namespace: str = "default") -> list[Obj]:
    """Every pod of ``app``, terminating ones included."""
    return api.list(PODS, namespace, label_selector=f"spark-app-selector={app}").items


def running(api: KubernetesApi, app: str, count: int, namespace: str = "default") -> bool:
    pods = executors(api, app, namespace).values()
    return len(pods) == count and all(p["status"].get("phase") == "Running" for p in pods)


def settled(backend: Any, count: int) -> bool:
    """Every create the backend made has returned and its pod was seen: nothing is in flight."""
    allocator = backend.status()["allocator"]
    return bool(allocator["executor_id_counter"] == count and not allocator["newly_created"])


def crashable(
    api: KubernetesApi, app: str, props: Mapping[str, str]
) -> tuple[KubernetesClusterSchedulerBackend, ThreadScheduler]:
    """A backend on threads of the test's own, so that :func:`crash` can stop them."""
    threads = ThreadScheduler("k8s-backend", threads=3)
    backend = KubernetesClusterSchedulerBackend.create(
        props, app_id=app, driver_url=DRIVER_URL, api=api, scheduler=threads
    )
    return backend, threads


def crash(dead: Any, threads: ThreadScheduler) -> None:
    """Stop a backend's threads without any cleanup, as a killed driver would."""
    dead.watch_source.stop()
    dead.polling_source.stop()
    dead.store.stop()
    dead.allocator.halt()
    threads.shutdown(5.0)


def fail_executor(cluster: LocalCluster, pod: Obj) -> None:
    """Make an executor fail: SIGKILL its process when the kubelet runs processes, else report it Failed
    through ``pods/status`` as a kubelet would."""
    name = pod["metadata"]["name"]
    container = pod["spec"]["containers"][0]["name"]
    if cluster.kubelet.run_processes:
        log = cluster.kubelet.log_path("default", name, container)

        def handles() -> list[Any]:
            return [h for h in cluster.kubelet.processes() if h.log_path == log]

        # A pod just bound may not have its process yet (a loaded machine): wait for it to start.
        assert log is not None and cluster.wait_until(lambda: len(handles()) == 1, timeout=120), (
            log, [h.log_path for h in cluster.kubelet.processes()],
        )  # fmt: skip
        os.kill(handles()[0].pid, signal.SIGKILL)
        return
    terminated = {"exitCode": 1, "reason": "Error", "message": "failed on purpose"}
    status = {
        "phase": "Failed",
        "containerStatuses": [
            {
                "name": container,
                "image": pod["spec"]["containers"][0]["image"],
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": terminated},
            }
        ],
    }
    code, body = https(cluster, "PATCH", f"/api/v1/namespaces/default/pods/{name}/status", {"status": status},
                       content_type="application/merge-patch+json")  # fmt: skip
    assert code == 200, body


def https(
    cluster: LocalCluster,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str | None = None,
    content_type: str = "application/json",
) -> tuple[int, Any]:
    """One request to the cluster's API server, as its admin unless ``token`` is given."""
    assert cluster.ca_cert is not None
    context = ssl.create_default_context(cafile=str(cluster.ca_cert))
    host, port = cluster.url.removeprefix("https://").rsplit(":", 1)
    connection = http.client.HTTPSConnection(host, int(port), context=context, timeout=30)
    headers = {"Authorization": f"Bearer {cluster.token if token is None else token}"}
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        headers["Content-Type"] = content_type
    try:
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        data = response.read().decode("utf-8", "replace")
    finally:
        connection.close()
    try:
        return response.status, json.loads(data)
    except ValueError:
        return response.status, data


RBAC_FILE = EXAMPLES / "driver-rbac.yaml"
REST_PATHS = {
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
}


def make_namespace(cluster: LocalCluster, namespace: str) -> None:
    """Create a namespace and wait for its default ServiceAccount (pods are refused before)."""
    cluster.api().create(NAMESPACES, None, {"metadata": {"name": namespace}})
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/default"
    until(lambda: https(cluster, "GET", path)[0] == 200, f"the default ServiceAccount of {namespace}")


def apply_rbac(cluster: LocalCluster, namespace: str) -> None:
    """``kubectl apply -n NAMESPACE -f driver-rbac.yaml`` when kubectl is installed; else the same objects
    created through the API, each put in ``namespace`` as ``-n`` does (the file names no namespace)."""
    kubectl = shutil.which("kubectl")
    if kubectl is not None:
        argv = [
            kubectl,
            "--kubeconfig",
            str(cluster.kubeconfig),
            "apply",
            "-n",
            namespace,
            "-f",
            str(RBAC_FILE),
        ]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        return
    for document in yaml.safe_load_all(RBAC_FILE.read_text(encoding="utf-8")):
        document["metadata"]["namespace"] = namespace
        code, body = https(cluster, "POST", REST_PATHS[document["kind"]].format(ns=namespace), document)
        assert code == 201, body


def token_for(cluster: LocalCluster, namespace: str, account: str) -> str:
    """A token of ``namespace/account`` from the TokenRequest API (what ``kubectl create token`` does)."""
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"expirationSeconds": 3600}}  # fmt: skip
    code, body = https(
        cluster, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token", request
    )
    assert code == 201, body
    return str(body["status"]["token"])


def client_props(cluster: LocalCluster, namespace: str, token: str) -> dict[str, str]:
    """A client-mode driver's connection settings: the URL, the token and the CA, nothing else."""
    return {
        "spark.master": f"pyk8s://{cluster.url}",
        "spark.kubernetes.namespace": namespace,
        "spark.kubernetes.authenticate.oauthToken": token,
        "spark.kubernetes.authenticate.caCertFile": str(cluster.ca_cert),
    }
