"""The third contract target: the official-client adapter against a real kube-apiserver (ControlPlane).

One ControlPlane serves the whole session. It runs without kube-scheduler (its status writes to
unschedulable pods would add MODIFIED events to the watch tests) and without the root-CA publisher (its
``kube-root-ca.crt`` ConfigMap in every namespace would show up in ConfigMap lists and watches); the
garbage collector, namespace and service-account controllers run, as the tests need them.

Before each test the namespaces the tests use are emptied, so each starts as on a fresh fake.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

import pytest
from contract_objects import NAMESPACES_USED
from contract_support import EVENT_TIMEOUT

from k8s_backend.kube.port import (
    CONFIG_MAPS,
    NAMESPACES,
    POD_GROUPS,
    PODS,
    PVCS,
    SERVICES,
    ApiError,
    KubernetesApi,
    NotFoundError,
    Obj,
    Resource,
)
from k8s_backend.local.control_plane import BuildError, ControlPlane, ControlPlaneBuilder
from k8s_backend.local.control_plane.runner import DEFAULT_CONTROLLERS

CREATED_BY_TESTS = ("team-a", "doomed")
KINDS = (PODS, CONFIG_MAPS, SERVICES, PVCS, POD_GROUPS)
_WATCH_GAUGE = re.compile(r"^apiserver_longrunning_requests\{([^}]*)\}\s+(\S+)", re.MULTILINE)

POD_GROUP_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "podgroups.scheduling.volcano.sh"},
    "spec": {
        "group": "scheduling.volcano.sh",
        "names": {
            "kind": "PodGroup",
            "listKind": "PodGroupList",
            "plural": "podgroups",
            "singular": "podgroup",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1beta1",
                "served": True,
                "storage": True,
                # Volcano's own CRD has a full schema; the contract only needs the object stored as sent.
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
                "subresources": {"status": {}},
            }
        ],
    },
}


def start_control_plane() -> Iterator[ControlPlane]:
    """The session's ControlPlane, set up for the contract tests; skips when Go is missing."""
    builder = ControlPlaneBuilder(progress=lambda line: print(line, flush=True))
    try:
        binaries = builder.ensure()
    except BuildError as error:
        pytest.skip(str(error).splitlines()[0])
    controllers = (*DEFAULT_CONTROLLERS, "-root-ca-cert-publisher")
    with ControlPlane(binaries, scheduler=False, controllers=controllers) as cp:
        _install_pod_group_crd(cp)
        api = cp.api()
        for namespace in NAMESPACES_USED:
            api.create(NAMESPACES, None, {"metadata": {"name": namespace}})
        for namespace in NAMESPACES_USED:
            path = f"/api/v1/namespaces/{namespace}/serviceaccounts/default"
            _until(lambda path=path: _exists(cp, path))  # type: ignore[misc]
        yield cp


def _install_pod_group_crd(cp: ControlPlane) -> None:
    status, body = cp.request(
        "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=POD_GROUP_CRD
    )
    assert status == 201, body
    _until(lambda: _exists(cp, "/apis/scheduling.volcano.sh/v1beta1/namespaces/contract/podgroups"))


def _exists(cp: ControlPlane, path: str) -> bool:
    return cp.request("GET", path)[0] == 200


def _until(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout} s: {predicate}")
        time.sleep(0.05)


def reset(api: KubernetesApi) -> None:
    """Empty the namespaces the tests use (finalizers that a failed test left are removed)."""
    for namespace in NAMESPACES_USED:
        for resource in KINDS:
            _empty(api, resource, namespace)


def _empty(api: KubernetesApi, resource: Resource, namespace: str) -> None:
    deadline = time.monotonic() + 30
    while items := api.list(resource, namespace).items:
        for item in items:
            name = item["metadata"]["name"]
            try:
                if item["metadata"].get("finalizers"):
                    api.patch(resource, namespace, name, {"metadata": {"finalizers": None}})
                api.delete(resource, namespace, name, grace_period_seconds=0)
            except NotFoundError:
                pass
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{resource.plural} left in {namespace}: {[i['metadata']['name'] for i in items]}"
            )
        time.sleep(0.05)


class RealControl:
    """:class:`contract_support.Control` for a real API server: what a client can do; skips the rest."""

    bookmarks_on_demand = False

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp

    def fail_next(
        self, verb: str, resource: Resource | None = None, *, status: int = 500, count: int = 1
    ) -> None:
        pytest.skip("fault injection (fail_next) exists only in the fake")

    def compact(self) -> None:
        pytest.skip("compaction on demand exists only in the fake (the real watch cache decides)")

    def set_pod_status(self, namespace: str, name: str, status: Obj) -> None:
        code, body = self.cp.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/{name}/status",
            body={"status": status},
            content_type="application/merge-patch+json",
        )
        if code != 200:
            raise ApiError(f"patching the status of pod {namespace}/{name}: {code} {body}", status=code)

    def drop_watches(self) -> None:
        pytest.skip("dropping every watch on demand exists only in the fake")

    def send_bookmark(self) -> None:
        pytest.skip("the real API server sends bookmarks on its own schedule (about once a minute)")

    def wait_for_watches(self, count: int, timeout: float = EVENT_TIMEOUT) -> None:
        # The API server's own gauge of open watches; the controllers watch cluster-wide, so the
        # namespaced ones are (nearly always) the tests'.
        deadline = time.monotonic() + timeout
        while (open_now := self.open_namespaced_watches()) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {count} open watches, the server has {open_now}")
            time.sleep(0.02)

    def open_namespaced_watches(self) -> int:
        status, text = self.cp.request("GET", "/metrics")
        assert status == 200, text
        total = 0.0
        for labels, value in _WATCH_GAUGE.findall(str(text)):
            if 'verb="WATCH"' in labels and 'scope="namespace"' in labels:
                total += float(value)
        return int(total)
