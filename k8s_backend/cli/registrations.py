"""Which executors are registered with a client-mode driver, for ``k8s-backend status``.

The CLI cannot ask a driver that runs outside the cluster, but the driver's heartbeat Lease tells it:
each renewal writes the registered executors into an annotation (:mod:`k8s_backend.heartbeat`). One
``get`` per client-mode application; a Lease that is gone, unreadable or from a driver that does not
write it leaves registration unknown rather than failing the command.
"""

from __future__ import annotations

import attrs

from k8s_backend.cli.apps import Application
from k8s_backend.kube.leases import heartbeat_lease_name, parse_time, registered_executors
from k8s_backend.kube.port import LEASES, ApiError, KubernetesApi


def with_registrations(api: KubernetesApi, app: Application) -> Application:
    """``app`` with its driver's registered executors as its heartbeat Lease last told them."""
    if app.driver is not None:
        return app  # a driver pod keeps no heartbeat Lease
    try:
        lease = api.get(LEASES, app.namespace, heartbeat_lease_name(app.app_id))
    except ApiError:  # not found (heartbeat off, driver gone) or not allowed: unknown
        return app
    registered = registered_executors(lease)
    if registered is None:
        return app
    as_of = parse_time((lease.get("spec") or {}).get("renewTime"))
    return attrs.evolve(app, registered=registered, registered_as_of=as_of)
