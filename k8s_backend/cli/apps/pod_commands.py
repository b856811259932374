"""The ``logs`` and ``events`` subcommands: an application's pod logs and its Kubernetes Events.

``logs ID`` prints the driver's log (``-e N``: executor N's), ``-f`` follows it; while the container
has not started (a Pending pod, an image pull) it keeps asking instead of failing. ``events ID``
prints the Events of the application's pods, oldest first, as ``kubectl get events`` would.
"""

from __future__ import annotations

import argparse
import threading
from typing import Any

from k8s_backend.cli.apps.applications import Application, age, labels_of, name_of
from k8s_backend.cli.apps.target import common_options, find_apps, run_with_target
from k8s_backend.cli.common.deps import Dependencies
from k8s_backend.cli.common.driver_log import ApiLogSource
from k8s_backend.cli.common.errors import CliError, UsageError
from k8s_backend.cli.common.options import Target
from k8s_backend.kube.labels import SPARK_EXECUTOR_ID_LABEL
from k8s_backend.kube.port import EVENTS, ApiError, Obj

DRIVER_CONTAINER = "spark-kubernetes-driver"
EXECUTOR_CONTAINER = "spark-kubernetes-executor"


def add_parsers(subparsers: Any) -> None:
    """Add ``logs`` and ``events`` to an argparse subparsers object."""
    logs = subparsers.add_parser(
        "logs",
        help="print the driver's (or an executor's) log",
        description="Print the log of an application's driver pod, or with -e of one of its executors. "
        "With -f, follow it until the container ends; a container that has not started yet is waited for.",
    )
    logs.add_argument("id", metavar="ID", help="NAMESPACE:DRIVER_POD, DRIVER_POD or APP_ID")
    logs.add_argument("-e", "--executor", metavar="N", help="the executor id (default: the driver)")
    logs.add_argument("-f", "--follow", action="store_true", help="follow the log until the container ends")
    logs.add_argument("--container", help="the container (default: Spark's; -c is --conf here)")
    common_options(logs)
    logs.set_defaults(handler=logs_command)

    events = subparsers.add_parser(
        "events",
        help="show the Kubernetes Events of an application's pods",
        description="Show the Events (scheduling failures, image pulls, kills, evictions) of the driver and "
        "executor pods of applications, oldest first.",
    )
    events.add_argument("ids", nargs="+", metavar="ID", help="NAMESPACE:DRIVER_POD, DRIVER_POD or APP_ID")
    common_options(events)
    events.set_defaults(handler=events_command)


def _pod_of(app: Application, executor: str | None) -> tuple[Obj, str]:
    """The pod to read and its Spark container."""
    if executor is None:
        if app.driver is None:
            raise UsageError(
                f"application {app.app_id} runs its driver outside the cluster (client mode): its log is "
                "where it runs; pass -e N for an executor's"
            )
        return app.driver, DRIVER_CONTAINER
    for pod in app.executors:
        if _executor_id(pod) == executor:
            return pod, EXECUTOR_CONTAINER
    known = sorted((_executor_id(p) for p in app.executors), key=lambda i: (not i.isdigit(), i.zfill(12)))
    raise UsageError(
        f"application {app.app_id} has no executor {executor}; its executors: {', '.join(known) or 'none'}"
    )


def _executor_id(pod: Obj) -> str:
    return str(labels_of(pod).get(SPARK_EXECUTOR_ID_LABEL) or "-")


def _container(pod: Obj, wanted: str | None, default: str) -> str:
    names = [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]
    if wanted is not None:
        if wanted not in names:
            choices = ", ".join(names)
            raise UsageError(f"pod {name_of(pod)} has no container {wanted!r}; its containers: {choices}")
        return wanted
    return default if default in names or not names else names[0]


def logs_command(args: argparse.Namespace, deps: Dependencies) -> int:
    def body(target: Target) -> int:
        apps = find_apps(target, [args.id], args.selector)
        if len(apps) > 1:
            ids = ", ".join(a.submission_id or a.app_id for a in apps)
            raise UsageError(f"{args.id} names {len(apps)} applications ({ids}): name one")
        app = apps[0]
        pod, spark_container = _pod_of(app, args.executor)
        container = _container(pod, args.container, spark_container)
        pod_log = getattr(target.connection.api, "pod_log", None)
        if not callable(pod_log):
            raise CliError("this API client cannot read pod logs")
        name = name_of(pod)
        if not args.follow:
            try:
                lines = pod_log(app.namespace, name, container=container, follow=False)
                for line in lines:
                    deps.console.result(line)
            except ApiError as error:
                if error.status == 400:  # "is waiting to start": say so in one line
                    raise CliError(f"{name}: {error.message}; use -f to wait for it") from None
                raise
            return 0
        stop = threading.Event()
        try:
            for line in ApiLogSource(pod_log, app.namespace, name, container).lines(stop):
                deps.console.result(line)
        except KeyboardInterrupt:
            stop.set()
        return 0

    return run_with_target(args, deps, body, verb="get", resource="pods/log")


def _event_time(event: Obj) -> str:
    """When the Event was last seen: a series' last observation (events.k8s.io style), lastTimestamp
    (legacy), else when it was first seen."""
    return str(
        (event.get("series") or {}).get("lastObservedTime")
        or event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


def _of_pods(name: str, names: set[str]) -> bool:
    """Whether an Event's pod is one of ``names``, or an executor of theirs that is gone (deleted or
    replaced): same ``<prefix>-exec-`` and a number, so a kill stays visible after the pod left."""
    if name in names:
        return True
    prefix, sep, number = name.rpartition("-exec-")
    return bool(sep) and number.isdigit() and any(n.startswith(prefix + sep) for n in names)


def _repeats(event: Obj) -> str:
    """`` (x3)`` for an Event seen three times, as ``kubectl describe`` counts them; empty once."""
    count = (event.get("series") or {}).get("count") or event.get("count") or 1
    return f" (x{count})" if isinstance(count, int) and count > 1 else ""


def events_command(args: argparse.Namespace, deps: Dependencies) -> int:
    def body(target: Target) -> int:
        apps = find_apps(target, args.ids, args.selector)
        now = deps.wall_clock()
        for app in apps:
            names = {name_of(p) for p in app.executors} | ({name_of(app.driver)} if app.driver else set())
            events = [
                e
                for e in target.connection.api.list(EVENTS, app.namespace).items
                if (e.get("involvedObject") or {}).get("kind") == "Pod"
                and _of_pods(str((e.get("involvedObject") or {}).get("name")), names)
            ]
            deps.console.result(f"Events of {app.app_id} ({len(events)}):")
            rows = [
                [
                    age(_event_time(e), now),
                    str(e.get("type") or "-"),
                    str(e.get("reason") or "-"),
                    "pod/" + str((e.get("involvedObject") or {}).get("name")),
                    " ".join(str(e.get("message") or "").split()) + _repeats(e),
                ]
                for e in sorted(events, key=_event_time)
            ]
            headers = ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
            widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers[:-1])]
            for row in [headers, *rows]:
                cells = [c.ljust(widths[i]) for i, c in enumerate(row[:-1])]
                deps.console.result("  ".join([*cells, row[-1]]).rstrip())
        return 0

    return run_with_target(args, deps, body, resource="events")
