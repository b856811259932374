"""Namespaces on a local cluster: made on demand, as a developer's own cluster should.

A real API server refuses pods in a namespace that does not exist (NamespaceLifecycle) and, until the
service account controller has made its ``default`` ServiceAccount, pods that name it (403). A local
cluster is private and short-lived, so asking it for a namespace (``api(ns)``, ``spark_conf(namespace=ns)``,
``pyk8s://local`` with ``spark.kubernetes.namespace``) makes that namespace and waits for its
ServiceAccount, instead of failing the first executor create.
"""

from __future__ import annotations

import threading
import time

from k8s_backend.kube.port import NAMESPACES, ApiError, ConflictError, KubernetesApi, NotFoundError, Resource

SERVICE_ACCOUNTS = Resource("ServiceAccount", "serviceaccounts")
ALWAYS_THERE = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


class NamespaceNotReadyError(RuntimeError):
    """The namespace's ``default`` ServiceAccount did not appear in time."""


def ensure_namespace(
    api: KubernetesApi, namespace: str, *, wait_for_service_account: bool, timeout: float = 60.0
) -> bool:
    """Create ``namespace`` unless it exists; with ``wait_for_service_account``, wait for its ``default``
    ServiceAccount too.

    Returns True when this call created it. The wait is for a real control plane, whose controller
    manager makes the account a moment later; the embedded server takes ``default`` as always there.
    """
    if namespace in ALWAYS_THERE:
        return False
    try:
        api.create(NAMESPACES, None, {"metadata": {"name": namespace}})
        created = True
    except ConflictError:
        created = False
    if not wait_for_service_account:
        return created
    deadline = time.monotonic() + timeout
    pause, woken = 0.05, threading.Event()  # an Event, not sleep: nothing else to wake on here
    while not _has_default_service_account(api, namespace):
        if time.monotonic() > deadline:
            raise NamespaceNotReadyError(
                f"namespace {namespace!r}: its 'default' ServiceAccount did not appear within "
                f"{timeout:.0f} s (is the controller manager running?)"
            )
        woken.wait(pause)
        pause = min(pause * 2, 0.5)
    return created


def _has_default_service_account(api: KubernetesApi, namespace: str) -> bool:
    try:
        api.get(SERVICE_ACCOUNTS, namespace, "default")
    except (NotFoundError, ApiError):
        return False
    return True
