"""The ``kubernetes`` Service for a real node's pods: its ClusterIP reaches the API server, which listens
on 127.0.0.1 only, so that in-cluster configuration (``KUBERNETES_SERVICE_HOST``/``_PORT``, the token and
CA the kubelet mounts) works in a pod as in any cluster.

Three changes, all scoped to the node's bridge and all named after it, so the cleanup (also after the
owner died) finds them from the bridge's name alone:

- nat table, chain ``K8SB-SVC-<suffix>`` jumped to from ``PREROUTING -i <bridge>``: DNAT of
  ``<ClusterIP>:<port>`` to ``127.0.0.1:<API server port>``;
- ``net.ipv4.conf.<bridge>.route_localnet = 1``: the kernel otherwise drops a packet from another
  interface routed to a loopback address. It goes with the bridge;
- filter table, chain of the same name jumped to from ``INPUT -i <bridge>``: what pods send to
  127.0.0.0/8 without that DNAT is dropped, so pods reach nothing else of this machine's loopback (the
  guard kube-proxy adds for the same sysctl, CVE-2020-8558).

Why not kube-proxy: its chains (``KUBE-SERVICES``...) are the machine's, one set for every node; two
node clusters here (tests run side by side, each cluster with the same Service range) would program
each other's ``10.0.0.1``. The API server is not exposed beyond this machine either: it still binds
127.0.0.1, and only packets entering on this node's bridge are translated. Other ClusterIPs are not
served; executors reach a cluster-mode driver at its pod IP (``spark.kubernetes.executor.useDriverPodIP``).
"""

from __future__ import annotations

import logging
from pathlib import Path

from k8s_backend.local.node.host import HostError, run

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.0/8"
CHAIN_PREFIX = "K8SB-SVC-"
_SYSCTL = "/proc/sys/net/ipv4/conf/{}/route_localnet"


def chain_name(bridge: str) -> str:
    """The chain of ``bridge``'s Service rules (in the nat and the filter table)."""
    return CHAIN_PREFIX + bridge.rsplit("-", 1)[-1]


def _jumps(bridge: str) -> list[tuple[str, list[str]]]:
    chain = chain_name(bridge)
    comment = ["-m", "comment", "--comment", f"k8s_backend node {bridge}: the kubernetes Service"]
    return [
        ("nat", ["PREROUTING", "-i", bridge, *comment, "-j", chain]),
        ("filter", ["INPUT", "-i", bridge, *comment, "-j", chain]),
    ]


def expose_api_server(bridge: str, service_ip: str, service_port: int, api_port: int) -> None:
    """Make ``service_ip:service_port`` reach ``127.0.0.1:api_port`` for the pods on ``bridge``."""
    chain = chain_name(bridge)
    for table in ("nat", "filter"):
        run(["iptables", "-t", table, "-N", chain])
    target = f"127.0.0.1:{api_port}"
    run(["iptables", "-t", "nat", "-A", chain, "-d", f"{service_ip}/32", "-p", "tcp",
         "--dport", str(service_port), "-j", "DNAT", "--to-destination", target])  # fmt: skip
    run(["iptables", "-t", "filter", "-A", chain, "-d", LOOPBACK, "-m", "conntrack",
         "!", "--ctstate", "DNAT,RELATED,ESTABLISHED", "-j", "DROP"])  # fmt: skip
    # The guard first, then the sysctl, then the DNAT: no moment where the loopback is open to pods.
    for table, jump in reversed(_jumps(bridge)):
        run(["iptables", "-t", table, "-I", *jump])
        if table == "filter":
            _write_sysctl(bridge, "1")
    log.info("pods on %s reach the API server at %s:%s", bridge, service_ip, service_port)


def _write_sysctl(bridge: str, value: str) -> None:
    path = Path(_SYSCTL.format(bridge))
    try:
        path.write_text(value)
    except OSError as error:
        raise HostError(f"cannot set route_localnet on {bridge} ({path}): {error.strerror}") from None


def remove(bridge: str) -> list[str]:
    """Undo :func:`expose_api_server` for ``bridge`` (what is absent is fine); what is left."""
    chain = chain_name(bridge)
    for table, jump in _jumps(bridge):
        while run(["iptables", "-t", table, "-D", *jump], check=False).returncode == 0:
            pass  # a rule inserted twice goes twice
    left = []
    for table in ("nat", "filter"):
        run(["iptables", "-t", table, "-F", chain], check=False)
        run(["iptables", "-t", table, "-X", chain], check=False)
        if run(["iptables", "-t", table, "-S", chain], check=False).returncode == 0:
            left.append(f"iptables chain {table}/{chain}")
    return left
