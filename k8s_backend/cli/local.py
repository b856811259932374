"""``k8s-backend local``: run a LocalCluster in the foreground and say how to point tools at it."""

from __future__ import annotations

import argparse
import errno
import ipaddress
import math
import socket
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from k8s_backend.cli.common.console import Console
from k8s_backend.kube.quantity import cpu_millis, memory_bytes
from k8s_backend.local.images import default_spark_image
from k8s_backend.local.kubeconfig import CONTEXT_NAME, KubeconfigEntry, kubeconfig_document
from k8s_backend.local.kubelet.nodes import Node

if TYPE_CHECKING:
    from k8s_backend.local.cluster import LocalCluster

LOOPBACK_NAMES = ("localhost",)
CONTROL_PLANES = ("embedded", "kubernetes")
RUNTIMES = ("processes", "containers")


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
    # Over 60 lines: one add_argument per option of `k8s-backend local`, nothing else.
    parser.add_argument(
        "--control-plane",
        choices=CONTROL_PLANES,
        default="embedded",
        help="embedded: the fast in-process API server (default); kubernetes: a real kube-apiserver, etcd, "
        "kube-scheduler and kube-controller-manager on 127.0.0.1 (https, RBAC), built with Go into "
        "~/.cache/k8s_backend (or $K8S_BACKEND_CACHE_DIR) the first time (~10 minutes)",
    )
    parser.add_argument(
        "--runtime",
        choices=RUNTIMES,
        default="processes",
        help="processes: the process kubelet runs each pod's command on this machine (default); "
        "containers (with --control-plane kubernetes, as root): a real kubelet, containerd and runc run "
        "pods in containers of a Spark image built here (the node's binaries and images are built into "
        "the cache the first time)",
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
        "--kubeconfig",
        default=None,
        metavar="PATH",
        help="also add this cluster to the kubeconfig file PATH (created if missing) as the current "
        "context, and take it out again on exit (default: only the work dir's own kubeconfig)",
    )
    parser.add_argument(
        "--context",
        default=None,
        metavar="NAME",
        help=f"the name of the cluster, user and context added to --kubeconfig (default: {CONTEXT_NAME})",
    )
    parser.add_argument(
        "--stop-grace", type=float, default=3.0, help="SIGTERM→SIGKILL grace on exit, seconds"
    )
    parser.add_argument(
        "--image",
        default=default_spark_image(),
        help="image name shown in the Spark example (default: the installed pyspark's version)",
    )


def argument_problem(args: argparse.Namespace) -> str | None:
    """The first option whose value cannot work, as ``--option VALUE: why; the fix``, or None."""
    kubeconfig, context = getattr(args, "kubeconfig", None), getattr(args, "context", None)
    if context is not None and kubeconfig is None:
        return f"--context {context}: names the context added to --kubeconfig PATH; give --kubeconfig too"
    if kubeconfig is not None:
        problem = KubeconfigEntry.problem(Path(kubeconfig).expanduser(), context or CONTEXT_NAME)
        if problem is not None:
            return problem
    if not 0 <= args.port <= 65535:
        return f"--port {args.port}: not a TCP port; use 1 to 65535, or leave --port out for a free port"
    if not math.isfinite(args.stop_grace) or args.stop_grace < 0:
        return f"--stop-grace {args.stop_grace:g}: must be 0 or more seconds (default 3)"
    if args.nodes < 1:
        return f"--nodes {args.nodes}: need at least 1 node"
    for flag, value, parse in (
        ("--node-cpu", args.node_cpu, cpu_millis),
        ("--node-memory", args.node_memory, memory_bytes),
    ):
        if value is None:
            continue
        try:
            amount = parse(value, field=flag)
        except ValueError as error:
            return f"{flag} {value}: {error}".replace(f"{flag}: ", "", 1)
        if amount <= 0:
            example = "8 or 3500m" if flag == "--node-cpu" else "16Gi"
            return f"{flag} {value}: must be more than 0, e.g. {example}"
    if args.work_dir is not None:
        work_dir = Path(args.work_dir)
        if work_dir.exists() and not work_dir.is_dir():
            return (
                f"--work-dir {args.work_dir}: is a file, not a directory; give a directory (created if "
                "missing)"
            )
    return None


def start_problem(error: OSError, args: argparse.Namespace) -> str | None:
    """What a failure to start says about the options (the port is taken, the host is not an address of
    this machine, the work directory cannot be made), or None when it is about none of them."""
    reason = error.strerror or str(error)
    if isinstance(error, socket.gaierror):
        return f"--host {args.host}: cannot be resolved ({reason}); give an IP address such as 127.0.0.1"
    if error.errno == errno.EADDRINUSE:
        return (
            f"--port {args.port}: {args.host}:{args.port} is already in use; pick another port, or leave "
            "--port out for a free one"
        )
    if error.errno == errno.EADDRNOTAVAIL:
        return (
            f"--host {args.host}: not an address of this machine ({reason}); use 127.0.0.1 (the default), "
            "0.0.0.0 for every address, or one of this machine's addresses"
        )
    if error.errno == errno.EACCES and error.filename is None and 0 < args.port < 1024:
        return f"--port {args.port}: ports below 1024 need root ({reason}); use a port from 1024 to 65535"
    if args.work_dir is not None and error.filename is not None:
        return (
            f"--work-dir {args.work_dir}: cannot use it ({reason}: {error.filename}); give a directory "
            "you can write to"
        )
    return None


def _nodes(args: argparse.Namespace) -> list[Node] | None:
    if args.nodes == 1 and args.node_cpu is None and args.node_memory is None:
        return None  # LocalCluster's default, sized for this machine
    cpu = args.node_cpu or "8"
    memory = args.node_memory or "16Gi"
    return [Node.of(f"node-{i + 1}", cpu=cpu, memory=memory) for i in range(args.nodes)]


def control_plane_problem(args: argparse.Namespace) -> str | None:
    """Why the options do not fit ``--control-plane kubernetes`` (it listens on free 127.0.0.1 ports and
    serves https only), or None."""
    if getattr(args, "runtime", "processes") == "containers":
        if getattr(args, "control_plane", "embedded") != "kubernetes":
            return "--runtime containers needs --control-plane kubernetes (a real kubelet needs a real API)"
        if args.no_processes or args.known_image or args.nodes != 1 or args.node_cpu or args.node_memory:
            return (
                "--no-processes, --known-image, --nodes, --node-cpu and --node-memory are the process "
                "kubelet's: not with --runtime containers (one real node, this machine's resources)"
            )
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
    driver_host: str = "127.0.0.1",
    runtime: str = "processes",
) -> str:
    """The instructions printed once the cluster is up (``driver_host``: where pods reach this machine)."""
    kind = (
        "a real control plane (kube-apiserver, etcd, kube-scheduler, kube-controller-manager)"
        if control_plane == "kubernetes"
        else "the embedded API server"
    )
    if runtime == "containers":
        kind += " and a real node (kubelet, containerd, runc)"
        pods = f"executor pods run in containers of {image}; they reach this driver at {driver_host}"
        logs = "`kubectl logs POD`"
    else:
        pods = "executor pods run as local JVMs on pyspark's jars"
        logs = "container logs under pods/<namespace>_<pod>_<uid>/logs/"
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
  work dir:    {work_dir}  ({logs})

kubectl:
  export KUBECONFIG={kubeconfig}
  kubectl get pods -w

Spark (client mode; {pods}):
  pyspark --master k8s://{url} \\
    --conf spark.kubernetes.container.image={image} \\
    --conf spark.kubernetes.namespace=default \\
    --conf spark.driver.host={driver_host}{auth}

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
    # Over 60 lines: the command's whole life (check, start, tell, wait, stop) with one try/finally that must
    # enclose it all.
    from k8s_backend.local.cluster import LocalCluster

    stream = out or sys.stdout
    console = Console(stderr=sys.stderr)
    control_plane = getattr(args, "control_plane", "embedded")
    try:
        problem = control_plane_problem(args) or argument_problem(args)
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
            runtime=getattr(args, "runtime", "processes"),
        )
        problem = exposure_problem(args.host, cluster.token)
        if problem is not None:
            raise ValueError(problem)
    except ValueError as error:
        console.error(str(error))
        return 2
    if control_plane == "kubernetes":
        failure = ensure_control_plane(sys.stderr)
        if failure is not None:
            console.error(failure)
            return 1
    try:
        cluster.start()
    except OSError as error:
        told = start_problem(error, args)
        if told is None:
            raise
        console.error(told)
        return 2
    stop = stop or threading.Event()
    entry = None
    try:
        kubeconfig = str(cluster.kubeconfig)
        if getattr(args, "kubeconfig", None) is not None:
            path, name = Path(args.kubeconfig).expanduser(), args.context or CONTEXT_NAME
            entry = _kubeconfig_entry(cluster, path, name)
            entry.add()
            kubeconfig = f"{path}  (context {name}, the current one until this cluster stops)"
        spark_conf = cluster.spark_conf()  # the node's own image and the driver host its pods reach
        containers = getattr(args, "runtime", "processes") == "containers"
        stream.write(
            describe(
                cluster.url,
                kubeconfig,
                str(cluster.work_dir),
                cluster.token,
                spark_conf["spark.kubernetes.container.image"] if containers else args.image,
                str(cluster.ca_cert) if cluster.ca_cert is not None else None,
                control_plane,
                driver_host=spark_conf["spark.driver.host"],
                runtime=getattr(args, "runtime", "processes"),
            )
        )
        stream.flush()
        if ready is not None:
            ready.set()
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        stream.write("\nstopped.\n")
    finally:
        try:
            if entry is not None:
                entry.remove()
        finally:
            cluster.stop()
    return 0


def _kubeconfig_entry(cluster: LocalCluster, path: Path, name: str) -> KubeconfigEntry:
    ca = cluster.ca_cert.read_bytes() if cluster.ca_cert is not None else None
    document = kubeconfig_document(cluster.url, cluster.token, context=name, ca_pem=ca, namespace="default")
    return KubeconfigEntry(path, document)


def main(argv: list[str] | None = None) -> int:
    """``python -m k8s_backend.cli.local``: the ``local`` subcommand on its own."""
    parser = argparse.ArgumentParser(prog="k8s-backend local", description=__doc__)
    configure_parser(parser)
    return run_local(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
