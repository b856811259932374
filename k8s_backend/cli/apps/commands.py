"""The ``status``, ``kill``, ``list`` and ``gc`` subcommands: their options and what they run."""

from __future__ import annotations

import argparse
import io
from collections.abc import Callable
from typing import Any

from k8s_backend.cli.apps import pod_commands
from k8s_backend.cli.apps.applications import (
    all_applications,
    kill_applications,
    show_list,
    show_status,
)
from k8s_backend.cli.apps.executor_table import OUTPUTS, rows_of, status_json, table_lines
from k8s_backend.cli.apps.gc import collect_garbage
from k8s_backend.cli.apps.registrations import with_registrations
from k8s_backend.cli.apps.target import common_options, find_apps, run_with_target
from k8s_backend.cli.apps.timeline_page import write_timeline
from k8s_backend.cli.common.cluster_api import Permission, preflight
from k8s_backend.cli.common.console import Console
from k8s_backend.cli.common.deps import Dependencies
from k8s_backend.cli.common.errors import UsageError
from k8s_backend.cli.common.options import Target
from k8s_backend.conf import keys
from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import CONFIG_MAPS, LEASES, PODS, PVCS, SECRETS, SERVICES

Handler = Callable[[argparse.Namespace, Dependencies], int]
GRACE_KEY = "spark.kubernetes.appKillPodDeletionGracePeriod"


def add_parsers(subparsers: Any) -> None:
    """Add ``status``, ``kill``, ``list``, ``gc``, ``logs`` and ``events`` to an argparse subparsers
    object."""
    for add in (_add_status, _add_kill, _add_list, _add_gc):
        add(subparsers)
    pod_commands.add_parsers(subparsers)


def _add_status(subparsers: Any) -> None:
    status = subparsers.add_parser(
        "status",
        help="show applications: driver state and executors",
        description="Show applications by submission id NAMESPACE:DRIVER_POD (a glob is allowed, as in "
        "spark-submit --status) or by application id.",
    )
    status.add_argument("ids", nargs="+", metavar="ID", help="NAMESPACE:DRIVER_POD, DRIVER_POD or APP_ID")
    status.add_argument(
        "-o",
        "--output",
        choices=OUTPUTS,
        default="table",
        help="table (default), wide (also IP, restarts and what an exit code means) or json",
    )
    status.add_argument(
        "-w", "--watch", action="store_true", help="show it again whenever it changes, until Ctrl-C"
    )
    status.add_argument(
        "--timeline",
        metavar="PATH",
        help="also write the executor timeline as a self-contained HTML file (one ID at a time), from what "
        "the cluster shows: the pods, their Events and what the driver publishes; the page notes what it "
        "cannot show",
    )
    common_options(status)
    status.set_defaults(handler=status_command)


def _add_kill(subparsers: Any) -> None:
    kill = subparsers.add_parser(
        "kill",
        help="stop applications: delete their driver pod and executor pods",
        description="Stop cluster-mode applications: delete the driver pod (its Service and ConfigMap go "
        "with it) and the executor pods, then wait until they are gone. For a client-mode application "
        "(ID = its application id) delete what its driver's stop would: the executor pods, the executor "
        "ConfigMaps and the driver's heartbeat Lease.",
    )
    kill.add_argument("ids", nargs="+", metavar="ID", help="NAMESPACE:DRIVER_POD, DRIVER_POD or APP_ID")
    kill.add_argument(
        "--grace-period",
        type=int,
        default=None,
        help=f"seconds pods get to stop (default: {GRACE_KEY}, else the pods' own)",
    )
    kill.add_argument("--no-wait", action="store_true", help="return once the deletions are requested")
    kill.add_argument("--timeout", type=float, default=60.0, help="how long to wait for the pods to go (s)")
    common_options(kill)
    kill.set_defaults(handler=kill_command)


def _add_list(subparsers: Any) -> None:
    listing = subparsers.add_parser(
        "list",
        help="list applications (driver pods and client-mode executors)",
        description="List applications: submission id, application id, name, driver phase, executor pods "
        "by phase, how many executors are registered with the driver (- when it does not tell), age.",
    )
    listing.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    common_options(listing)
    listing.set_defaults(handler=list_command)


def _add_gc(subparsers: Any) -> None:
    gc = subparsers.add_parser(
        "gc",
        help="delete leftovers (executor pods, config maps, services, PVCs) of apps whose driver is gone",
        description="Delete the executor pods, ConfigMaps, Services, PVCs and heartbeat Leases of "
        "applications whose driver pod is gone, or whose client-mode driver's heartbeat Lease expired or "
        "was deleted (Pending pods included). Applications that still have a driver pod or a fresh "
        "heartbeat are never touched. Objects of client-mode applications with no trace of a driver are "
        "kept unless --all-orphans is given, and even then not while an executor pod is Pending or Running.",
    )
    gc.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
    gc.add_argument("--dry-run", action="store_true", help="only print what would be deleted")
    gc.add_argument(
        "--all-orphans",
        action="store_true",
        help="also delete objects of apps with no known driver pod (client mode) and no running executor",
    )
    common_options(gc)
    gc.set_defaults(handler=gc_command)


KILL_NEEDS = [Permission("delete", PODS), Permission("deletecollection", PODS)]
# What a client-mode application's stop deletes besides its pods (its driver is not in the cluster).
KILL_CLIENT_NEEDS = [
    Permission("deletecollection", CONFIG_MAPS),
    Permission("deletecollection", SECRETS),
    Permission("delete", LEASES),
]
GC_READ_NEEDS = [Permission("list", LEASES), Permission("get", LEASES)]
GC_DELETE_NEEDS = [
    Permission("delete", kind) for kind in (PODS, SERVICES, CONFIG_MAPS, SECRETS, PVCS, LEASES)
]


WATCH_INTERVAL = 2.0  # seconds between looks of `status -w`


def status_command(args: argparse.Namespace, deps: Dependencies) -> int:
    def render(target: Target) -> tuple[str, str]:
        """The text to show and what it says without ages (which alone change every second)."""
        api = target.connection.api
        apps = [with_registrations(api, app) for app in find_apps(target, args.ids, args.selector)]
        now = deps.wall_clock()
        document = status_json(apps, now)
        if args.output == "json":
            return document, document
        buffer = io.StringIO()
        show_status(apps, Console(stdout=buffer, stderr=io.StringIO()), now)
        lines = buffer.getvalue().rstrip("\n").splitlines()
        for app in apps:
            rows = rows_of(app, now)
            if rows:
                lines += ["", f"Executors of {app.app_id}:", *table_lines(rows, wide=args.output == "wide")]
        return "\n".join(lines), document

    def body(target: Target) -> int:
        if args.timeline:
            api = target.connection.api
            apps = [with_registrations(api, app) for app in find_apps(target, args.ids, args.selector)]
            write_timeline(api, apps, args.timeline, deps.wall_clock())
            deps.console.info(f"Wrote the executor timeline to {args.timeline}")
        text, shown = render(target)
        deps.console.result(text)
        if not args.watch:
            return 0
        try:
            while True:
                deps.sleep(WATCH_INTERVAL)
                text, current = render(target)
                if current != shown:
                    deps.console.result(("" if args.output == "json" else "\n") + text)
                    shown = current
        except KeyboardInterrupt:
            return 0

    return run_with_target(args, deps, body)


def _grace_period(args: argparse.Namespace, target: Target) -> int | None:
    if args.grace_period is not None:
        if args.grace_period < 0:
            raise UsageError(f"--grace-period {args.grace_period}: must be 0 or more seconds")
        return int(args.grace_period)
    raw = target.properties.get(GRACE_KEY)
    if raw is None:
        return None
    try:
        return int(keys.key(GRACE_KEY).convert(raw))
    except ConfigError as error:
        raise UsageError(str(error)) from None


def kill_command(args: argparse.Namespace, deps: Dependencies) -> int:
    def body(target: Target) -> int:
        grace = _grace_period(args, target)
        apps = find_apps(target, args.ids, args.selector, leases=True)
        for namespace in sorted({app.namespace for app in apps}):
            client_mode = any(app.driver is None for app in apps if app.namespace == namespace)
            preflight(target.connection, namespace, KILL_NEEDS + (KILL_CLIENT_NEEDS if client_mode else []))
        result = kill_applications(
            target.connection.api,
            apps,
            deps.console,
            grace_period=grace,
            wait=not args.no_wait,
            timeout=args.timeout,
            sleep=deps.sleep,
            clock=deps.clock,
            wall_clock=deps.wall_clock,
        )
        return 1 if result.remaining else 0

    return run_with_target(args, deps, body, verb="delete")


def list_command(args: argparse.Namespace, deps: Dependencies) -> int:
    def body(target: Target) -> int:
        namespace = None if args.all_namespaces else target.namespace
        preflight(target.connection, namespace)
        api = target.connection.api
        apps = [with_registrations(api, app) for app in all_applications(api, namespace, args.selector)]
        show_list(apps, deps.console, deps.wall_clock())
        return 0

    return run_with_target(args, deps, body)


def gc_command(args: argparse.Namespace, deps: Dependencies) -> int:
    def body(target: Target) -> int:
        namespace = None if args.all_namespaces else target.namespace
        preflight(target.connection, namespace, GC_READ_NEEDS)
        if not args.dry_run:
            preflight(target.connection, namespace, GC_DELETE_NEEDS)
        collect_garbage(
            target.connection.api,
            namespace,
            deps.console,
            dry_run=args.dry_run,
            all_orphans=args.all_orphans,
            selector=args.selector,
            now=deps.wall_clock(),
        )
        return 0

    return run_with_target(
        args,
        deps,
        body,
        verb="list or delete",
        resource="pods, services, configmaps, secrets, PVCs or leases",
    )
