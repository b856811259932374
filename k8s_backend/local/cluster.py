"""LocalCluster: a Kubernetes API server on 127.0.0.1 and a process kubelet, so real Spark runs "pods"
without a cluster.

    with LocalCluster() as cluster:
        spark = k8s_backend.spark.session(cluster.master, cluster.spark_conf())

On exit (normal, exception, Ctrl-C, SIGTERM or interpreter exit) every process the kubelet started is
stopped: SIGTERM, then SIGKILL after ``stop_grace`` seconds. The kubelet runs any pod's command on this
host, so the server always requires a bearer token (random unless given), which the kubeconfig (written
owner-only), :meth:`LocalCluster.api` and :meth:`LocalCluster.spark_conf` carry. Both make the namespace
they are given.

``LocalCluster(control_plane="kubernetes")`` serves the same API from a real control plane instead
(kube-apiserver over https, etcd, kube-scheduler, kube-controller-manager; see
:mod:`k8s_backend.local.control_plane`): the same process kubelet registers the nodes and runs the pods
kube-scheduler binds to them.
"""

from __future__ import annotations

import atexit
import logging
import secrets
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

from k8s_backend.kube.masters import pyk8s_url
from k8s_backend.kube.port import NAMESPACES, PODS, ApiError, KubernetesApi
from k8s_backend.local.images import default_spark_image
from k8s_backend.local.kubeconfig import CONTEXT_NAME, KubeconfigPath, kubeconfig_document, write_private
from k8s_backend.local.kubelet import ImagePolicy, Node, ProcessKubelet
from k8s_backend.local.kubelet.nodes import default_nodes as default_nodes  # re-exported: an old import path
from k8s_backend.local.namespaces import ensure_namespace
from k8s_backend.memkube.api import InMemoryKubernetes

if TYPE_CHECKING:
    from k8s_backend.kube.client import OfficialKubernetesApi
    from k8s_backend.local.apiserver import ApiServer
    from k8s_backend.local.control_plane.with_kubelet import KubeletControlPlane
    from k8s_backend.local.node.cluster import ContainerControlPlane
    from k8s_backend.local.node.runtime import RealNode

log = logging.getLogger(__name__)

# A local cluster may serve for days: its logs of calls (each with a copy of its body) and of requests
# keep only the latest (far more than a test or benchmark reads).
CALL_LOG_SIZE, REQUEST_LOG_SIZE = 20_000, 100_000
_HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_T = TypeVar("_T")


class LocalCluster:
    """A local Kubernetes API (:class:`InMemoryKubernetes` served over HTTP) plus a :class:`ProcessKubelet`.

    :param nodes: simulated nodes (default: :func:`default_nodes`).
    :param run_processes: False marks pods Running without starting processes (scale tests).
    :param token: the bearer token the server requires (None: a random one, see :attr:`token`). There is
        no unauthenticated mode: the kubelet runs any pod's command as this user.
    :param work_dir: where pod volumes and container logs go (default: a temporary directory that is
        removed on exit unless ``keep_work_dir``).
    :param known_images: the images the kubelet can "pull" (None: any image). Other images wait in
        ErrImagePull / ImagePullBackOff.
    :param graceful_deletion: deleted pods keep a deletionTimestamp until their containers stopped.
    :param control_plane: ``"embedded"`` (the in-memory API server) or ``"kubernetes"`` (a real control
        plane built from the official Go modules, https only; no :attr:`fake`, :attr:`server`, ``host``
        or ``port``; deletion is always graceful).
    :param events: the kubelet (and the embedded server's scheduler) record the pods' Kubernetes Events
        as a real cluster's (Scheduled, FailedScheduling, Pulled, Started, Killing, ...: deduplicated,
        expired after an hour); ``k8s-backend events ID`` shows them. False records none.
    """

    def __init__(
        self,
        *,
        nodes: Sequence[Node] | None = None,
        run_processes: bool = True,
        token: str | None = None,
        work_dir: str | Path | None = None,
        known_images: Iterable[str] | None = None,
        graceful_deletion: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
        keep_work_dir: bool = False,
        stop_grace: float = 3.0,
        image_pull_backoff: float = 0.5,
        tls: bool = False,
        control_plane: str = "embedded",
        events: bool = True,
        runtime: str = "processes",
    ) -> None:
        if control_plane not in ("embedded", "kubernetes"):
            raise ValueError(f"LocalCluster(control_plane={control_plane!r}): 'embedded' or 'kubernetes'")
        if runtime not in ("processes", "containers"):
            raise ValueError(f"LocalCluster(runtime={runtime!r}): 'processes' or 'containers'")
        if runtime == "containers" and control_plane != "kubernetes":
            raise ValueError(
                "LocalCluster(runtime='containers') needs control_plane='kubernetes': a real kubelet "
                "registers with a real API server only"
            )
        self._runtime = runtime
        self._containers: ContainerControlPlane | None = None
        self._control_plane_kind = control_plane
        self._real: KubeletControlPlane | None = None
        self._reader: OfficialKubernetesApi | None = None
        self._nodes = list(nodes) if nodes is not None else default_nodes(run_processes)
        self._run_processes = run_processes
        if token is not None and not token.strip():
            raise ValueError("LocalCluster(token=''): pass a non-empty token, or None for a random one")
        self._token = token if token is not None else secrets.token_urlsafe(24)
        self._given_work_dir = Path(work_dir) if work_dir is not None else None
        self._images = ImagePolicy(known_images, backoff_initial=image_pull_backoff)
        self._graceful = graceful_deletion
        self._host = host
        self._port = port
        self._keep_work_dir = keep_work_dir or work_dir is not None
        self._stop_grace = stop_grace
        self._tls = tls
        self._events = events
        self._ca_cert: Path | None = None
        self._lock = threading.Lock()
        self._started = False
        self._stopped = False
        self._work_dir: Path | None = None
        self._fake: InMemoryKubernetes | None = None
        self._server: ApiServer | None = None
        self._kubelet: ProcessKubelet | None = None
        self._kubeconfig: Path | None = None
        self._apis: list[OfficialKubernetesApi] = []
        self._previous_handlers: dict[int, Any] = {}

    # -- lifecycle -----------------------------------------------------------------------------------

    def start(self) -> LocalCluster:
        """Start the API server and the kubelet and write the kubeconfig; returns self."""
        with self._lock:
            if self._started:
                raise RuntimeError("this LocalCluster was already started; create a new one")
            self._started = True
        atexit.register(self.stop)
        made = None  # a given work dir this start creates: removed again if the start fails
        try:
            self._install_signal_handlers()
            self._work_dir = self._given_work_dir or Path(tempfile.mkdtemp(prefix="k8s-backend-local-"))
            made = None if self._work_dir.exists() else self._work_dir
            self._work_dir.mkdir(parents=True, exist_ok=True)
            if self._control_plane_kind == "kubernetes":
                self._start_real(self._work_dir)
            else:
                self._start_embedded(self._work_dir)
            self._kubeconfig = KubeconfigPath(self._work_dir / "kubeconfig")
            write_private(self._kubeconfig, yaml.safe_dump(self.kubeconfig_dict(), sort_keys=False))
        except BaseException:
            self.stop()
            if made is not None:
                shutil.rmtree(made, ignore_errors=True)
            raise
        log.info("local cluster at %s (kubeconfig %s)", self.url, self._kubeconfig)
        return self

    def _start_embedded(self, work_dir: Path) -> None:
        from k8s_backend.local.apiserver import ApiServer

        self._fake = InMemoryKubernetes(graceful_pod_deletion=self._graceful, call_log_size=CALL_LOG_SIZE)
        self._fake.create(NAMESPACES, None, {"metadata": {"name": "default"}})
        serving = None
        if self._tls:  # a CA of this cluster's own, so that kubectl (never a token over http) works
            from k8s_backend.local.control_plane.certs import make_pki

            pki = make_pki(work_dir / "pki")
            self._ca_cert, serving = pki.ca_cert, (pki.serving_cert, pki.serving_key)
        self._server = ApiServer(
            self._fake,
            host=self._host,
            port=self._port,
            token=self._token,
            logs=self._log_path,
            tls=serving,
            request_log_size=REQUEST_LOG_SIZE,
        )
        self._server.start()
        self._kubelet = ProcessKubelet(
            self._fake,
            work_dir=work_dir,
            nodes=self._nodes,
            run_processes=self._run_processes,
            images=self._images,
            stop_grace=self._stop_grace,
            events=self._events,
        )
        self._kubelet.start()

    def _start_real(self, work_dir: Path) -> None:
        from k8s_backend.local.control_plane.with_kubelet import KubeletControlPlane

        if self._runtime == "containers":
            from k8s_backend.local.node.cluster import ContainerControlPlane

            self._containers = ContainerControlPlane(admin_token=self._token)
            self._containers.start()
            self._ca_cert = Path(self._containers.control_plane.ca_file)
            return
        self._real = KubeletControlPlane(
            work_dir=work_dir, nodes=self._nodes, run_processes=self._run_processes, images=self._images,
            stop_grace=self._stop_grace, admin_token=self._token,
        )  # fmt: skip
        self._real.start()
        self._kubelet = self._real.kubelet
        self._ca_cert = Path(self._real.control_plane.ca_file)

    def stop(self) -> None:
        """Stop every process the kubelet started, then the server; idempotent and safe to call anytime."""
        with self._lock:
            if self._stopped or not self._started:
                return
            self._stopped = True
        # The kubelet first: it stops every process it started, whatever happens to the rest. (Should a
        # second Ctrl-C cut this short, the kernel's parent-death signal still takes the processes down
        # when Python exits.)
        steps: list[Callable[[], None]] = []
        if self._kubelet is not None:
            steps.append(self._kubelet.stop)
        steps.extend(api.close for api in self._apis)
        if self._real is not None:
            steps.append(self._real.stop)  # the kubelet (already stopped), then the control plane
        if self._containers is not None:
            steps.append(self._containers.stop)  # every container, the node, then the control plane
        if self._server is not None:
            steps.append(self._server.stop)
        if self._fake is not None:
            steps.append(self._fake.close)
        try:
            for step in steps:
                try:
                    step()
                except Exception:
                    log.exception("stopping the local cluster: %s failed", step)
        finally:
            self._restore_signal_handlers()
            atexit.unregister(self.stop)
            if self._work_dir is not None and not self._keep_work_dir:
                shutil.rmtree(self._work_dir, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        if self._stopped:
            state = "stopped"
        elif self._started and (self._server, self._real, self._containers) != (None, None, None):
            state = f"running at {self.url}"
        else:
            state = "not started"
        processes = "processes" if self._run_processes else "no processes"
        nodes = ", ".join(f"{n.name} ({n.allocatable})" for n in self._nodes)
        return f"<LocalCluster {state}; {processes}; nodes: {nodes}>"

    # -- what users reach for ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The API server URL, e.g. ``http://127.0.0.1:41234`` (https with TLS or a real control plane)."""
        if self._real is not None:
            return self._real.control_plane.url
        if self._containers is not None:
            return self._containers.control_plane.url
        return self._running(self._server).url

    @property
    def master(self) -> str:
        """``pyk8s://<url>``: the master URL with which k8s_backend manages this cluster's executors
        (what :func:`k8s_backend.spark.session` and ``k8s-backend submit`` take)."""
        return pyk8s_url(self.url)

    @property
    def spark_k8s_master(self) -> str:
        """``k8s://<url>``: the master URL for Spark's own JVM backend on this cluster."""
        return "k8s://" + self.url

    @property
    def kubeconfig(self) -> Path:
        """The kubeconfig file for kubectl, Spark and the official client (context ``k8s-backend-local``).

        A :class:`~pathlib.Path` that also works where a string path is expected: ``str()`` it, or pass
        it as is to ``kubernetes.config.new_client_from_config``."""
        return self._running(self._kubeconfig)

    @property
    def token(self) -> str:
        """The bearer token the server requires (set before :meth:`start`)."""
        return self._token

    @property
    def ca_cert(self) -> Path | None:
        """The CA certificate of the https server (``tls=True``), else None."""
        return self._ca_cert

    @property
    def work_dir(self) -> Path:
        return self._running(self._work_dir)

    @property
    def fake(self) -> InMemoryKubernetes:
        """The in-memory API behind the embedded server (for assertions and fault injection in tests)."""
        if self._real is not None or self._containers is not None:
            raise RuntimeError("LocalCluster(control_plane='kubernetes') has no fake: use api()")
        return self._running(self._fake)

    @property
    def node(self) -> RealNode:
        """The real node of ``runtime="containers"`` (containerd, kubelet, the pod network)."""
        if self._containers is None:
            raise RuntimeError("only LocalCluster(runtime='containers') has a real node")
        return self._containers.node

    @property
    def kubelet(self) -> ProcessKubelet:
        return self._running(self._kubelet)

    @property
    def server(self) -> ApiServer:
        return self._running(self._server)

    def api(self, namespace: str = "default") -> OfficialKubernetesApi:
        """The real adapter (official client over HTTP) bound to this cluster; closed on exit."""
        from k8s_backend.kube.client import OfficialKubernetesApi
        from k8s_backend.kube.settings import ApiClientConf

        ca = str(self._ca_cert) if self._ca_cert is not None else ""
        conf = ApiClientConf(master=self.url, oauth_token=self._token, ca_cert_file=ca)
        # An explicit environment: the user's own kubeconfig and service account must not leak in.
        environ = {"KUBECONFIG": str(self.kubeconfig), "HOME": str(self.work_dir)}
        api = OfficialKubernetesApi.from_conf(conf, namespace_default=namespace, environ=environ)
        self._apis.append(api)
        self.ensure_namespace(namespace, api)
        return api

    def ensure_namespace(self, namespace: str, api: KubernetesApi | None = None) -> None:
        """Make ``namespace`` and, on a real control plane, wait for its ``default`` ServiceAccount."""
        real = self._real is not None or self._containers is not None
        ensure_namespace(api or self._admin(), namespace, wait_for_service_account=real)

    def spark_conf(self, image: str | None = None, namespace: str = "default") -> dict[str, str]:
        """Spark properties for client mode against this cluster (driver on 127.0.0.1), with
        :attr:`master` (k8s_backend's); the image defaults to :func:`default_spark_image`."""
        self.ensure_namespace(namespace)
        # Containers reach this machine at their bridge's gateway; the process kubelet's on 127.0.0.1.
        driver_host, default_image = "127.0.0.1", default_spark_image()
        if self._containers is not None:
            driver_host, default_image = self._containers.node.gateway, self._containers.spark_image
        conf = {
            "spark.master": self.master,
            "spark.submit.deployMode": "client",
            "spark.kubernetes.container.image": image or default_image,
            "spark.kubernetes.namespace": namespace,
            "spark.driver.host": driver_host,
            "spark.driver.bindAddress": driver_host,
            # Client mode reads spark.kubernetes.authenticate.*; spark-submit in cluster mode .submission.*.
            "spark.kubernetes.authenticate.oauthToken": self._token,
            "spark.kubernetes.authenticate.submission.oauthToken": self._token,
        }
        if self._ca_cert is not None:
            for family in ("spark.kubernetes.authenticate.", "spark.kubernetes.authenticate.submission."):
                conf[family + "caCertFile"] = str(self._ca_cert)
        return conf

    def _log_path(self, namespace: str, name: str, container: str) -> Path | None:
        kubelet = self._kubelet
        return None if kubelet is None else kubelet.log_path(namespace, name, container)

    def kubeconfig_dict(self) -> dict[str, Any]:
        """The kubeconfig written to :attr:`kubeconfig`, as data."""
        ca = self._ca_cert.read_bytes() if self._ca_cert is not None else None
        return kubeconfig_document(
            self.url, self._token, context=CONTEXT_NAME, ca_pem=ca, namespace="default"
        )

    def wait_until(self, predicate: Callable[[], bool], timeout: float = 30.0) -> bool:
        """Block until ``predicate()`` holds (re-checked as the kubelet works); False on timeout."""
        if self._containers is None:
            return self.kubelet.wait_until(predicate, timeout)
        # A real kubelet tells nothing here: re-check every 0.2 s.
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        return True

    def pod_phase(self, name: str, namespace: str = "default") -> str | None:
        """A pod's phase, or None if it does not exist."""
        try:
            pod = self._admin().get(PODS, namespace, name)
        except ApiError:
            return None
        return str((pod.get("status") or {}).get("phase", ""))

    # -- helpers ---------------------------------------------------------------------------------------

    def _admin(self) -> KubernetesApi:
        if (self._real is not None or self._containers is not None) and self._reader is None:
            self._reader = self.api()  # one client for every call, closed on exit
        return self._reader or self.fake

    def _running(self, value: _T | None) -> _T:
        if value is None:
            raise RuntimeError("the LocalCluster is not running: use `with LocalCluster() as cluster:`")
        return value

    def _install_signal_handlers(self) -> None:
        # SIGTERM/SIGHUP would kill Python without unwinding, leaving executor JVMs behind: turn them
        # into SystemExit so `with` blocks and atexit stop the cluster. Only from the main thread, and
        # only where nobody installed a handler of their own.
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in _HANDLED_SIGNALS:
            if signal.getsignal(sig) is signal.SIG_DFL:
                self._previous_handlers[sig] = signal.signal(sig, _exit_on_signal)

    def _restore_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, previous in self._previous_handlers.items():
            if signal.getsignal(sig) is _exit_on_signal:
                signal.signal(sig, previous)
        self._previous_handlers.clear()


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)
