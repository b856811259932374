"""``k8s-backend local``: run a LocalCluster in the foreground and say how to point tools at it."""

from __future__ import annotations

import argparse
import ipaddress
import sys
import threading
from typing import Any, TextIO

from k8s_backend.local.images import default_spark_image
from k8s_backend.local.kubelet.nodes import Node

LOOPBACK_NAMES = ("localhost",)
CONTROL_PLANES = ("embedded", "kubernetes")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``local`` subcommand to an ``argparse`` subparsers object; returns its parser."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "local",
        help="run a local Kubernetes API and process kubelet (Spark executors become local processes)",
        description=(
            "Start a Kubernetes API server on this machine with a kubelet that runs pods as local "
            "processes (Spark executor pods become JVMs on pyspark's jars). Runs until Ctrl-C; every "
            "process it started is stopped on exit. --control-plane kubernetes runs a real control plane "
            "(kube-apiserver, etcd, kube-scheduler, kube-controller-manager, built from the official Go "
            "modules on first use) instead of the embedded API server."
        ),
    )
    configure_parser(parser)
    parser.set_defaults(func=run_local)
    return parser


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """The ``local`` options, on any parser."""
    parser.add_argument(
        "--control-plane",
        choices=CONTROL_PLANES,
        default="embedded",
        help="embedded: the fast in-process API server (default); kubernetes: a real kube-apiserver, etcd, "
        "kube-scheduler and kube-controller-manager on 127.0.0.1 (https, RBAC), built with Go into "
        "~/.cache/k8s_backend (or $K8S_BACKEND_CACHE_DIR) the first time (~10 minutes)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free port)")
    parser.add_argument(
        "--token", default=None, help="bearer token clients must send (default: a random one, printed)"
    )
    parser.add_argument(
        "--nodes", type=int, default=1, help="number of simulated nodes (default: %(default)s)"
    )
    parser.add_argument("--node-cpu", default=None, help="allocatable CPU per node, e.g. 8 or 3500m")
    parser.add_argument("--node-memory", default=None, help="allocatable memory per node, e.g. 16Gi")
    parser.add_argument(
        "--known-image",
        action="append",
        default=None,
        metavar="IMAGE",
        help="an image the kubelet can pull (repeatable; default: every image); others get ErrImagePull",
    )
    parser.add_argument(
        "--no-processes", action="store_true", help="mark pods Running without starting processes"
    )
    parser.add_argument(
        "--no-tls",
        action="store_true",
        help="serve plain http (default: https with a CA of the cluster's own, which kubectl needs: it "
        "never sends a token over http)",
    )
    parser.add_argument(
        "--work-dir", default=None, help="pod volumes and container logs (default: a temp dir)"
    )
    parser.add_argument(
        "--stop-grace", type=float, default=3.0, help="SIGTERM→SIGKILL grace on exit, seconds"
    )
    parser.add_argument(
        "--image",
        default=default_spark_image(),
        help="image name shown in the Spark example (default: the installed pyspark's version)",
    )


def _nodes(args: argparse.Namespace) -> list[Node] | None:
    if args.nodes < 1:
        raise ValueError(f"--nodes={args.nodes}: need at least 1 node")
    if args.nodes == 1 and args.node_cpu is None and args.node_memory is None:
        return None  # LocalCluster's default, sized for this machine
    cpu = args.node_cpu or "8"
    memory = args.node_memory or "16Gi"
    return [Node.of(f"node-{i + 1}", cpu=cpu, memory=memory) for i in range(args.nodes)]


def control_plane_problem(args: argparse.Namespace) -> str | None:
    """Why the options do not fit ``--control-plane kubernetes`` (it listens on free 127.0.0.1 ports and
    serves https only), or None."""
    if getattr(args, "control_plane", "embedded") != "kubernetes":
        return None
    clashes = [
        flag
        for flag, given in (
            (f"--host {args.host}", args.host != "127.0.0.1"),
            (f"--port {args.port}", args.port != 0),
            ("--no-tls", args.no_tls),
        )
        if given
    ]
    if not clashes:
        return None
    return (
        f"{', '.join(clashes)}: not with --control-plane kubernetes, which serves https on a free port of "
        "127.0.0.1 only; leave them out (the URL is printed once it is up)"
    )


def ensure_control_plane(err: TextIO) -> str | None:
    """Build the real control plane into its cache unless it is there (progress on ``err``); the one-line
    reason it cannot be built (no Go, a failed build), or None."""
    from k8s_backend.local.control_plane import BuildError, ControlPlaneBuilder

    try:
        ControlPlaneBuilder(progress=lambda line: print(line, file=err, flush=True)).ensure()
    except BuildError as error:
        return str(error)
    return None


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``): reachable from this machine only."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_problem(host: str, token: str | None) -> str | None:
    """Why listening on ``host`` is refused, or None: the kubelet runs any pod's command on this
    machine, so a server reachable from elsewhere must require a token."""
    if is_loopback(host) or token:
        return None
    return (
        f"--host {host} would let anyone who reaches this address run commands on this machine, and no "
        "token is in use; pass --token TOKEN (clients then need it) or listen on 127.0.0.1"
    )


def describe(
    url: str,
    kubeconfig: str,
    work_dir: str,
    token: str | None,
    image: str,
    ca_cert: str | None = None,
    control_plane: str = "embedded",
) -> str:
    """The instructions printed once the cluster is up."""
    kind = (
        "a real control plane (kube-apiserver, etcd, kube-scheduler, kube-controller-manager)"
        if control_plane == "kubernetes"
        else "the embedded API server"
    )
    auth = f" \\\n    --conf spark.kubernetes.authenticate.oauthToken={token}" if token else ""
    backend_auth = f"\n  spark.kubernetes.authenticate.oauthToken={token}" if token else ""
    if ca_cert:
        auth += f" \\\n    --conf spark.kubernetes.authenticate.caCertFile={ca_cert}"
        backend_auth += f"\n  spark.kubernetes.authenticate.caCertFile={ca_cert}"
    return f"""\
k8s-backend local cluster is running.
  API server:  {url}
  served by:   {kind}
  kubeconfig:  {kubeconfig}
  work dir:    {work_dir}  (container logs under pods/<namespace>_<pod>_<uid>/logs/)

kubectl:
  export KUBECONFIG={kubeconfig}
  kubectl get pods -w

Spark (client mode; executor pods run as local JVMs on pyspark's jars):
  pyspark --master k8s://{url} \\
    --conf spark.kubernetes.container.image={image} \\
    --conf spark.kubernetes.namespace=default \\
    --conf spark.driver.host=127.0.0.1{auth}

k8s_backend:
  spark.master=pyk8s://{url}   (or KUBECONFIG={kubeconfig} with spark.master=pyk8s://){backend_auth}

Press Ctrl-C to stop; every process started here is stopped on exit.
"""


def run_local(
    args: argparse.Namespace,
    *,
    out: TextIO | None = None,
    ready: threading.Event | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Run the cluster until Ctrl-C, SIGTERM or ``stop`` is set; ``ready`` is set once it is up."""
    from k8s_backend.local.cluster import LocalCluster

    stream = out or sys.stdout
    control_plane = getattr(args, "control_plane", "embedded")
    try:
        problem = control_plane_problem(args)
        if problem is not None:
            raise ValueError(problem)
        nodes = _nodes(args)
        if args.token is not None and not args.token.strip():
            raise ValueError("--token is empty: pass a token, or leave --token out for a random one")
        cluster = LocalCluster(
            nodes=nodes,
            run_processes=not args.no_processes,
            token=args.token,
            work_dir=args.work_dir,
            known_images=args.known_image,
            host=args.host,
            port=args.port,
            stop_grace=args.stop_grace,
            tls=not args.no_tls,
            control_plane=control_plane,
        )
        problem = exposure_problem(args.host, cluster.token)
        if problem is not None:
            raise ValueError(problem)
    except ValueError as error:
        print(f"k8s-backend local: {error}", file=sys.stderr)
        return 2
    if control_plane == "kubernetes":
        failure = ensure_control_plane(sys.stderr)
        if failure is not None:
            print(f"k8s-backend local: {failure}", file=sys.stderr)
            return 1
    stop = stop or threading.Event()
    try:
        with cluster:
            stream.write(
                describe(
                    cluster.url,
                    str(cluster.kubeconfig),
                    str(cluster.work_dir),
                    cluster.token,
                    args.image,
                    str(cluster.ca_cert) if cluster.ca_cert is not None else None,
                    control_plane,
                )
            )
            stream.flush()
            if ready is not None:
                ready.set()
            while not stop.wait(0.5):
                pass
    except KeyboardInterrupt:
        stream.write("\nstopped.\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m k8s_backend.cli.local``: the ``local`` subcommand on its own."""
    parser = argparse.ArgumentParser(prog="k8s-backend local", description=__doc__)
    configure_parser(parser)
    return run_local(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
