"""What the application subcommands share: their common options, connecting to the cluster, and
finding applications by the IDs the user typed."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from k8s_backend.cli.apps.applications import Application, find_applications, parse_app_ref
from k8s_backend.cli.common.cluster_api import Connection, preflight
from k8s_backend.cli.common.deps import Dependencies
from k8s_backend.cli.common.errors import CliError, UsageError, explain_api_error
from k8s_backend.cli.common.options import Target, add_cluster_options, connect_target
from k8s_backend.kube.port import ApiError


def common_options(parser: argparse.ArgumentParser) -> None:
    """``-l/--selector`` and the cluster options."""
    parser.add_argument("-l", "--selector", default="", help="extra label selector, e.g. team=data")
    add_cluster_options(parser)


def run_with_target(
    args: argparse.Namespace,
    deps: Dependencies,
    body: Callable[[Target], int],
    *,
    verb: str = "list",
    resource: str = "pods",
) -> int:
    """Connect, run ``body``, and explain an API failure (naming ``verb`` and ``resource``)."""
    target = connect_target(args, deps.environ, deps.connect)
    try:
        return body(target)
    except ApiError as error:
        raise explain_failure(error, target.connection, target.namespace, verb, resource) from None
    finally:
        target.connection.api.close()


def explain_failure(
    error: ApiError, connection: Connection, namespace: str | None, verb: str, resource: str
) -> CliError:
    return explain_api_error(error, connection.endpoint, verb=verb, resource=resource, namespace=namespace)


def find_apps(target: Target, ids: list[str], selector: str, *, leases: bool = False) -> list[Application]:
    """The applications ``ids`` name (each must match at least one)."""
    apps: list[Application] = []
    for text in ids:
        try:
            namespace, pattern = parse_app_ref(text, target.namespace)
        except ValueError as error:
            raise UsageError(str(error)) from None
        preflight(target.connection, namespace)
        found = find_applications(target.connection.api, namespace, pattern, selector, leases=leases)
        if not found:
            raise CliError(f"no application matches {text!r} in namespace {namespace}")
        apps.extend(found)
    return apps
