"""Options shared by the ``status``, ``kill``, ``list`` and ``gc`` subcommands: where the cluster is.

They read Spark properties exactly as ``submit`` does (``--properties-file`` or spark-defaults.conf,
then ``--conf``, then ``--master`` and ``--namespace``), so the same settings reach the same cluster.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

import attrs

from k8s_backend.cli.common.cluster_api import (
    Connection,
    Connector,
    master_kind,
    normalize_master,
    submission_api_conf,
    to_kubernetes_conf,
)
from k8s_backend.cli.common.errors import UsageError
from k8s_backend.cli.common.submit_args import SubmitArgs, merge_properties, parse_conf_pair
from k8s_backend.conf.frozen import FrozenDict, freeze
from k8s_backend.kube.masters import MasterKind


@attrs.frozen
class Target:
    """The properties, namespace and connection of a management command."""

    properties: FrozenDict = attrs.field(converter=freeze)
    namespace: str
    connection: Connection


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    """``--master``, ``--namespace``, ``--conf``, ``--properties-file``, ``--kubeconfig`` and
    ``--context`` on ``parser``."""
    parser.add_argument(
        "--master", help="the API server: pyk8s://https://HOST:PORT (default: kubeconfig or in-cluster)"
    )
    parser.add_argument(
        "-n", "--namespace", help="namespace (default: spark.kubernetes.namespace, else default)"
    )
    parser.add_argument(
        "-c",
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark property, e.g. spark.kubernetes.authenticate.submission.oauthToken=... (repeatable)",
    )
    parser.add_argument(
        "--properties-file",
        help="Spark properties file (default: spark-defaults.conf as spark-submit finds it)",
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")


def cluster_properties(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, str]:
    """Merged properties from the cluster options (usage errors name the bad option)."""
    pairs = tuple(parse_conf_pair(text) for text in args.conf)
    flags = {"--master": args.master} if args.master else {}
    merged = merge_properties(
        SubmitArgs(flags=flags, conf=pairs, properties_file=args.properties_file), environ
    )
    properties = dict(merged.properties)
    properties["spark.master"] = normalize_master(properties.get("spark.master"))
    for value, key in (
        (args.namespace, "spark.kubernetes.namespace"),
        (args.kubeconfig, "spark.kubernetes.kubeconfig"),
        (args.context, "spark.kubernetes.context"),
    ):
        if value:
            properties[key] = value
    return properties


def connect_target(args: argparse.Namespace, environ: Mapping[str, str], connect: Connector) -> Target:
    """Check the options and connect (no API call yet)."""
    properties = cluster_properties(args, environ)
    conf = to_kubernetes_conf(properties)
    if master_kind(conf) is MasterKind.LOCAL:
        raise UsageError(
            "pyk8s://local is a cluster that lives only inside one `k8s-backend submit`; to manage "
            "applications on a local cluster, start it with `k8s-backend local` and pass its URL as --master"
        )
    return Target(properties, conf.namespace, connect(submission_api_conf(properties), conf.namespace))
