"""Which executors are registered with an application's driver, for ``k8s-backend status``.

The CLI cannot ask the driver, but the driver tells it in an annotation (``k8s-backend.io/registered-
executors``): a client-mode driver in each renewal of its heartbeat Lease
(:mod:`k8s_backend.backend.heartbeat`),
read with one ``get`` per application; a cluster-mode driver on its own pod when the set changes
(:mod:`k8s_backend.backend.registration_publisher`), read from the pod the CLI already listed (no request). A
Lease that is gone or unreadable, or a driver that does not write it, leaves registration unknown rather
than failing the command.
"""

from __future__ import annotations

import attrs

from k8s_backend.cli.apps.applications import Application
from k8s_backend.kube.activity import executor_activity
from k8s_backend.kube.leases import (
    heartbeat_lease_name,
    parse_time,
    registered_executors,
    registrations_written_at,
)
from k8s_backend.kube.port import LEASES, ApiError, KubernetesApi


def with_registrations(api: KubernetesApi, app: Application) -> Application:
    """``app`` with its driver's registered executors (and its executor activity, see
    :mod:`k8s_backend.kube.activity`) as its pod or heartbeat Lease last told them."""
    driver = app.driver
    if driver is not None:  # a driver pod writes them on itself
        app = attrs.evolve(app, activity=executor_activity(driver))
        registered = registered_executors(driver)
        if registered is None:
            return app
        return attrs.evolve(app, registered=registered, registered_as_of=registrations_written_at(driver))
    try:
        lease = api.get(LEASES, app.namespace, heartbeat_lease_name(app.app_id))
    except ApiError:  # not found (heartbeat off, driver gone) or not allowed: unknown
        return app
    app = attrs.evolve(app, activity=executor_activity(lease))
    registered = registered_executors(lease)
    if registered is None:
        return app
    as_of = parse_time((lease.get("spec") or {}).get("renewTime"))
    return attrs.evolve(app, registered=registered, registered_as_of=as_of)
