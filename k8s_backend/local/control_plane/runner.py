"""ControlPlane: etcd, kube-apiserver, kube-controller-manager and kube-scheduler on 127.0.0.1.

    with ControlPlane() as cp:
        api = cp.api()              # k8s_backend's official-client adapter, through cp.kubeconfig
        subprocess.run(["kubectl", "--kubeconfig", cp.kubeconfig, "get", "ns"])

Every process listens on 127.0.0.1 only, on free ports. The API server serves TLS with a certificate
signed by a CA made for this cluster, authenticates static tokens (an admin in ``system:masters``; the
controller manager, scheduler and process kubelet as their own users), authorizes with RBAC and Node,
and signs service-account tokens. It reaches kubelets (logs, exec) with a client certificate of that CA
bound to ``system:kubelet-api-admin``, and checks their serving certificates, which :meth:`ControlPlane.sign`
makes, against it. ``__enter__`` returns once ``/readyz`` is ok and the ``default``
ServiceAccount of namespace ``default`` exists (pods are refused with 403 before). Everything is
stopped on exit, and by the kernel if the owner dies (see :mod:`k8s_backend.local.control_plane.processes`).
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import shutil
import ssl
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from k8s_backend.local.control_plane.build import ControlPlaneBinaries, ControlPlaneBuilder
from k8s_backend.local.control_plane.certs import CertificateSpec, ClusterPki, issue_certificate, make_pki
from k8s_backend.local.control_plane.credentials import (
    Credentials,
    TokenUser,
    kubelet_client_role_binding,
    kubelet_role_binding,
    write_kubeconfig,
)
from k8s_backend.local.control_plane.processes import (
    OWNER_FILE,
    WORK_DIR_PREFIX,
    ManagedProcess,
    Spawner,
    etcd_healthy,
    free_port,
    free_ports,
    remove_stale_work_dirs,
    wait_gone,
)

if TYPE_CHECKING:
    from k8s_backend.kube.client import OfficialKubernetesApi

log = logging.getLogger(__name__)
_T = TypeVar("_T")

CONTEXT_NAME = "k8s-backend-control-plane"
SERVICE_CIDR = "10.0.0.0/24"
SERVICE_IP = "10.0.0.1"  # the first address of SERVICE_CIDR: the kubernetes Service
ISSUER = "https://kubernetes.default.svc.cluster.local"
# Node IPAM needs a cluster CIDR that nothing here uses. The node lifecycle controller stays on: it lifts
# the not-ready taint of nodes that the process kubelet registers and heartbeats (and, without nodes,
# does nothing). "*" keeps serviceaccount, serviceaccount-token, namespace and garbagecollector.
DEFAULT_CONTROLLERS = ("*", "-nodeipam")


class ControlPlaneError(Exception):
    """A process failed to start or the cluster did not become ready; includes the log's tail."""


class ControlPlane:
    """A real Kubernetes control plane for the duration of a ``with`` block.

    :param binaries: prebuilt binaries; default: built or reused from the cache (minutes the first time).
    :param scheduler: False leaves kube-scheduler out (its status writes to unschedulable pods would
        show up in tests that watch pods).
    :param controllers: kube-controller-manager's ``--controllers``.
    :param start_timeout: seconds for ``/readyz`` and then for the default ServiceAccount.
    :param stop_grace: seconds between SIGTERM and SIGKILL on exit.
    :param keep_dir: keep the work dir (logs, etcd data) after exit, for debugging.
    :param admin_token: the admin's bearer token (default: a random one).
    """

    def __init__(
        self,
        binaries: ControlPlaneBinaries | None = None,
        *,
        scheduler: bool = True,
        controllers: Sequence[str] = DEFAULT_CONTROLLERS,
        start_timeout: float = 180.0,
        stop_grace: float = 10.0,
        keep_dir: bool = False,
        progress: Callable[[str], None] | None = None,
        admin_token: str | None = None,
    ) -> None:
        self._binaries = binaries
        self._with_scheduler = scheduler
        self._controllers = tuple(controllers)
        self._start_timeout = start_timeout
        self._stop_grace = stop_grace
        self._keep_dir = keep_dir
        self._progress = progress
        self._dir: Path | None = None
        self._pki: ClusterPki | None = None
        self._credentials = Credentials.generate(admin_token)
        self._port = 0
        self._processes: list[ManagedProcess] = []
        self._spawner: Spawner | None = None
        self._apis: list[OfficialKubernetesApi] = []
        self._ssl: ssl.SSLContext | None = None
        self.timings: dict[str, float] = {}
        """Seconds from the start of ``start()`` to ``readyz`` and ``default_service_account``."""

    # -- lifecycle ------------------------------------------------------------------------------------

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> ControlPlane:
        """Start every process and wait until the cluster accepts pods; :class:`ControlPlaneError` if not."""
        if self._dir is not None:
            raise RuntimeError("this ControlPlane is already started")
        binaries = self._binaries or ControlPlaneBuilder(progress=self._progress).ensure()
        started = time.monotonic()
        remove_stale_work_dirs()
        self._dir = Path(tempfile.mkdtemp(prefix=WORK_DIR_PREFIX))
        (self._dir / OWNER_FILE).write_text(str(os.getpid()))
        self._spawner = Spawner()
        try:
            self._pki = make_pki(self._dir / "pki", service_ip=SERVICE_IP)
            self._ssl = ssl.create_default_context(cafile=str(self._pki.ca_cert))
            etcd_url = self._start_etcd(binaries)
            self._port = free_port()
            self._start_apiserver(binaries, etcd_url)
            self._wait("kube-apiserver /readyz", self._ready, self._start_timeout)
            self.timings["readyz"] = time.monotonic() - started
            self._write_kubeconfigs()
            self._bind_kubelet_roles()
            self._start_controller_manager(binaries)
            if self._with_scheduler:
                self._start_scheduler(binaries)
            self._wait("the default ServiceAccount", self._default_service_account, self._start_timeout)
            self.timings["default_service_account"] = time.monotonic() - started
        except BaseException:
            self.stop()
            raise
        log.info(
            "control plane %s ready: /readyz after %.1f s, default ServiceAccount after %.1f s (dir %s)",
            self.url, self.timings["readyz"], self.timings["default_service_account"], self._dir,
        )  # fmt: skip
        return self

    def stop(self) -> None:
        """Stop every process (newest first: SIGTERM, then SIGKILL) and remove the work dir. Idempotent."""
        for api in self._apis:
            api.close()
        self._apis.clear()
        for process in reversed(self._processes):
            process.stop(self._stop_grace)
        if not wait_gone(self._processes):
            log.warning("control-plane processes still present after stop: %s", self._processes)
        if self._spawner is not None:
            self._spawner.close()
            self._spawner = None
        if self._dir is not None and not self._keep_dir:
            shutil.rmtree(self._dir, ignore_errors=True)

    # -- what clients need ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``https://127.0.0.1:PORT``."""
        return f"https://127.0.0.1:{self._running(self._port)}"

    @property
    def token(self) -> str:
        """The admin's bearer token (group ``system:masters``)."""
        return self._credentials.admin.token

    @property
    def ca_file(self) -> str:
        """Path of the cluster CA certificate (PEM)."""
        return str(self._running(self._pki).ca_cert)

    @property
    def ca_data(self) -> bytes:
        """The cluster CA certificate (PEM bytes; a kubeconfig holds them base64-encoded)."""
        return self._running(self._pki).ca_cert.read_bytes()

    @property
    def kubeconfig(self) -> str:
        """Path of an admin kubeconfig (CA inline, bearer token) for kubectl and the Python client."""
        return str(self.work_dir / "admin.kubeconfig")

    @property
    def work_dir(self) -> Path:
        """Logs (``<process>.log``), etcd data, keys and kubeconfigs."""
        return self._running(self._dir)

    @property
    def processes(self) -> Sequence[ManagedProcess]:
        """The running processes, in start order."""
        return tuple(self._processes)

    @property
    def kubelet_kubeconfig(self) -> str:
        """Path of the process kubelet's kubeconfig (a node user in ``system:nodes``)."""
        return str(self.work_dir / "kubelet.kubeconfig")

    def sign(self, spec: CertificateSpec, cert: Path, key: Path) -> None:
        """Write a new key to ``key`` and a certificate for ``spec`` signed by this cluster's CA to ``cert``
        (a kubelet's serving certificate, for instance: the API server checks it against that CA)."""
        issue_certificate(self._running(self._pki), spec, cert, key)

    def api(self, namespace: str = "default", *, kubeconfig: str | None = None) -> OfficialKubernetesApi:
        """k8s_backend's official-client adapter, configured from :attr:`kubeconfig` (or another of this
        cluster's kubeconfigs, such as :attr:`kubelet_kubeconfig`); closed on exit."""
        from k8s_backend.conf.model import ApiClientConf
        from k8s_backend.kube.client import OfficialKubernetesApi

        # An explicit environment: the user's own kubeconfig and service account must not leak in.
        environ = {"KUBECONFIG": kubeconfig or self.kubeconfig, "HOME": str(self.work_dir)}
        api = OfficialKubernetesApi.from_conf(ApiClientConf(), namespace_default=namespace, environ=environ)
        self._apis.append(api)
        return api

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        token: str | None = None,
        content_type: str = "application/json",
        timeout: float = 10.0,
    ) -> tuple[int, Any]:
        """One HTTPS request as the admin (or with ``token``); the status and the JSON (or text) answer."""
        connection = http.client.HTTPSConnection("127.0.0.1", self._port, context=self._ssl, timeout=timeout)
        headers = {"Authorization": f"Bearer {self.token if token is None else token}"}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        try:
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
            data = response.read()
        finally:
            connection.close()
        text = data.decode("utf-8", "replace")
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text

    # -- starting the processes -----------------------------------------------------------------------

    def _start_etcd(self, binaries: ControlPlaneBinaries) -> str:
        client, peer = (f"http://127.0.0.1:{port}" for port in free_ports(2))
        self._spawn("etcd", [
            str(binaries.etcd), "--name=default", f"--data-dir={self.work_dir / 'etcd'}",
            f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=default={peer}", "--initial-cluster-state=new",
            # A throwaway cluster: no fsync (much faster on a busy disk), no 64 MiB WAL preallocation.
            "--unsafe-no-fsync", "--quota-backend-bytes=1073741824",
        ])  # fmt: skip
        self._wait("etcd /health", lambda: etcd_healthy(client), self._start_timeout)
        return client

    def _start_apiserver(self, binaries: ControlPlaneBinaries, etcd_url: str) -> None:
        pki = self._running(self._pki)
        tokens = self._credentials.write_token_file(self.work_dir / "tokens.csv")
        self._spawn("kube-apiserver", [
            str(binaries.kube_apiserver),
            f"--etcd-servers={etcd_url}",
            f"--secure-port={self._port}", "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            # Without it a loopback advertise address is refused ("may not be in the loopback range").
            "--endpoint-reconciler-type=none",
            f"--cert-dir={self.work_dir / 'apiserver-certs'}",
            f"--tls-cert-file={pki.serving_cert}", f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}",
            f"--token-auth-file={tokens}",
            # Towards kubelets (logs, exec): a client certificate, the CA their serving certificates come
            # from (:meth:`sign`), and the node's InternalIP (its Hostname resolves nowhere here).
            f"--kubelet-client-certificate={pki.kubelet_client_cert}",
            f"--kubelet-client-key={pki.kubelet_client_key}",
            f"--kubelet-certificate-authority={pki.ca_cert}",
            "--kubelet-preferred-address-types=InternalIP,Hostname",
            "--authorization-mode=RBAC,Node",
            f"--service-account-issuer={ISSUER}",
            f"--service-account-key-file={pki.service_account_public}",
            f"--service-account-signing-key-file={pki.service_account_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--allow-privileged=true",
            "--profiling=false",
        ])  # fmt: skip

    def _write_kubeconfigs(self) -> None:
        ca = self.ca_data
        write_kubeconfig(Path(self.kubeconfig), self.url, ca, self._credentials.admin, CONTEXT_NAME)
        for user, name in (
            (self._credentials.controller_manager, "controller-manager"),
            (self._credentials.scheduler, "scheduler"),
            (self._credentials.kubelet, "kubelet"),
        ):
            write_kubeconfig(self.work_dir / f"{name}.kubeconfig", self.url, ca, user, CONTEXT_NAME)

    def _bind_kubelet_roles(self) -> None:
        path = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
        for binding in (kubelet_role_binding(self._credentials.kubelet), kubelet_client_role_binding()):
            status, body = self.request("POST", path, body=binding)
            if status not in (201, 409):
                raise ControlPlaneError(f"creating {binding['metadata']['name']} failed: {status} {body}")

    def _component_auth(self, name: str) -> list[str]:
        path = self.work_dir / f"{name}.kubeconfig"
        # --secure-port=0: they serve nothing, so nothing else listens on this machine's ports.
        return [
            f"--kubeconfig={path}",
            f"--authentication-kubeconfig={path}",
            f"--authorization-kubeconfig={path}",
            "--leader-elect=false",
            "--secure-port=0",
        ]

    def _start_controller_manager(self, binaries: ControlPlaneBinaries) -> None:
        pki = self._running(self._pki)
        self._spawn("kube-controller-manager", [
            str(binaries.kube_controller_manager), *self._component_auth("controller-manager"),
            f"--controllers={','.join(self._controllers)}",
            # Each controller acts as its own service account, with the permissions RBAC gives it.
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki.service_account_key}",
            f"--root-ca-file={pki.ca_cert}",
            f"--cluster-signing-cert-file={pki.ca_cert}", f"--cluster-signing-key-file={pki.ca_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
        ])  # fmt: skip

    def _start_scheduler(self, binaries: ControlPlaneBinaries) -> None:
        self._spawn("kube-scheduler", [str(binaries.kube_scheduler), *self._component_auth("scheduler")])

    def _spawn(self, name: str, argv: list[str]) -> ManagedProcess:
        spawner = self._running(self._spawner)
        log_path = self.work_dir / f"{name}.log"
        # A minimal environment: no proxy settings or kubeconfig of the user's reach these processes.
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.work_dir)}
        process = ManagedProcess(name, spawner.popen(argv, log_path=log_path, env=env), log_path)
        self._processes.append(process)
        log.info("started %s (pid %s), log %s", name, process.pid, log_path)
        return process

    # -- waiting --------------------------------------------------------------------------------------

    def _wait(self, what: str, ready: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            for process in self._processes:
                if not process.alive():
                    raise ControlPlaneError(
                        f"{process.name} exited with {process.exit_code} while waiting for {what}; "
                        f"the end of {process.log_path}:\n{process.tail()}"
                    )
            if ready():
                return
            if time.monotonic() > deadline:
                last = self._processes[-1]
                raise ControlPlaneError(
                    f"{what} not ready within {timeout:.0f} s; the end of {last.log_path}:\n{last.tail()}"
                )
            time.sleep(0.1)

    def _ready(self) -> bool:
        try:
            status, body = self.request("GET", "/readyz", timeout=5)
        except (OSError, http.client.HTTPException):
            return False
        return status == 200 and body == "ok"

    def _default_service_account(self) -> bool:
        try:
            status, _ = self.request("GET", "/api/v1/namespaces/default/serviceaccounts/default", timeout=5)
        except (OSError, http.client.HTTPException):
            return False
        return status == 200

    def _running(self, value: _T | None) -> _T:
        if not value:
            raise RuntimeError("the control plane is not running (use it inside its with block)")
        return value

    def user(self, name: str) -> TokenUser:
        """The token user ``admin``, ``controller-manager``, ``scheduler`` or ``kubelet``."""
        return {
            "admin": self._credentials.admin,
            "controller-manager": self._credentials.controller_manager,
            "scheduler": self._credentials.scheduler,
            "kubelet": self._credentials.kubelet,
        }[name]
