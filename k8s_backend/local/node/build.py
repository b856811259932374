"""Builds the pinned binaries of a real Kubernetes node and caches them beside the control plane.

- kubelet: ``k8s.io/kubernetes/cmd/kubelet``, in a generated module with the same staging replaces and
  version ``-ldflags`` as the control plane (:mod:`k8s_backend.local.control_plane.build`);
- containerd, containerd-shim-runc-v2 and ctr: ``github.com/containerd/containerd/v2`` without the btrfs,
  devmapper and zfs snapshotters (none of them is used here; they need C headers);
- runc: ``github.com/opencontainers/runc`` with seccomp, which needs cgo, Debian's ``libseccomp-dev``
  and ``pkg-config``;
- the CNI plugins bridge, host-local, loopback and portmap: ``github.com/containernetworking/plugins``.

Binaries land in ``$K8S_BACKEND_CACHE_DIR/node/<kubernetes version>/`` (CNI plugins under ``cni/``),
and a manifest (:data:`MANIFEST`) records which pinned version each one was built from, so a changed
pin rebuilds exactly what changed.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs

from k8s_backend.local.control_plane.build import (
    KUBERNETES_VERSION,
    BuildError,
    find_go,
    kube_ldflags,
    kubernetes_go_mod,
)

log = logging.getLogger(__name__)

CONTAINERD_VERSION = "v2.4.2"
RUNC_VERSION = "v1.5.3"
CNI_PLUGINS_VERSION = "v1.10.0"

CONTAINERD_MODULE = "github.com/containerd/containerd/v2"
RUNC_MODULE = "github.com/opencontainers/runc"
CNI_MODULE = "github.com/containernetworking/plugins"
CONTAINERD_TAGS = "no_btrfs no_devmapper no_zfs"

MANIFEST = "node.json"  # name -> the version it was built from, plus the seconds each build took
CNI_DIR = "cni"


@attrs.frozen
class Binary:
    """One binary of the node: how it is built and which version it is pinned to."""

    name: str
    package: str  # the Go package (its main)
    version: str
    subdir: str = ""  # "cni" for the CNI plugins
    cgo: bool = False
    tags: str = ""
    ldflags: str = "-s -w"

    @property
    def key(self) -> str:
        return f"{self.subdir}/{self.name}" if self.subdir else self.name


def _containerd(name: str) -> Binary:
    # containerd's Makefile sets the version this way; without it, --version says "+unknown".
    ldflags = f"-s -w -X {CONTAINERD_MODULE}/version.Version={CONTAINERD_VERSION}"
    return Binary(name, f"{CONTAINERD_MODULE}/cmd/{name}", CONTAINERD_VERSION, tags=CONTAINERD_TAGS,
                  ldflags=ldflags)  # fmt: skip


def _cni(name: str, path: str) -> Binary:
    ldflags = f"-s -w -X {CNI_MODULE}/pkg/utils/buildversion.BuildVersion={CNI_PLUGINS_VERSION}"
    return Binary(name, f"{CNI_MODULE}/plugins/{path}", CNI_PLUGINS_VERSION, subdir=CNI_DIR, ldflags=ldflags)


KUBELET = Binary("kubelet", "k8s.io/kubernetes/cmd/kubelet", KUBERNETES_VERSION)
# kubectl for `kubectl logs/exec` against the node (a client of the control plane's own version).
KUBECTL = Binary("kubectl", "k8s.io/kubernetes/cmd/kubectl", KUBERNETES_VERSION)
KUBERNETES_BINARIES = (KUBELET, KUBECTL)  # built in the control plane's generated module
# kubelet and kubectl last: they share most of their packages with the control plane, built just before.
NODE_BINARIES: tuple[Binary, ...] = (
    _containerd("containerd"),
    _containerd("containerd-shim-runc-v2"),
    _containerd("ctr"),
    Binary("runc", RUNC_MODULE, RUNC_VERSION, cgo=True, tags="seccomp",
           ldflags=f"-s -w -X main.version={RUNC_VERSION.lstrip('v')}"),
    _cni("bridge", "main/bridge"),
    _cni("host-local", "ipam/host-local"),
    _cni("loopback", "main/loopback"),
    _cni("portmap", "meta/portmap"),
    KUBELET,
    KUBECTL,
)  # fmt: skip

# Debian packages a build needs, and why (installed when missing and this process may run apt-get).
RUNC_PACKAGES = {"libseccomp-dev": "runc's seccomp support", "pkg-config": "runc's cgo build", "gcc": "cgo"}


# Tools the running node needs on this machine: tool -> (its Debian package, what needs it).
HOST_TOOLS = {
    "iptables": ("iptables", "the pods' FORWARD rule, the kubelet's chains, the Service rule"),
    "ip": ("iproute2", "the pod bridge, its address and routes"),
}


def missing_host_tools() -> dict[str, str]:
    """The Debian packages of :data:`HOST_TOOLS` whose tool is not on PATH, and what needs each."""
    return {package: why for tool, (package, why) in HOST_TOOLS.items() if shutil.which(tool) is None}


def ensure_host_tools(progress: Callable[[str], None], *, install: bool = True) -> None:
    """Install what :func:`missing_host_tools` names (see :func:`ensure_debian_packages`)."""
    missing = missing_host_tools()
    if missing:
        ensure_debian_packages(missing, progress, install=install)


class MissingDependency(BuildError):
    """Something the node needs besides Go is missing and could not be installed (the message says what)."""


def node_cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """``$K8S_BACKEND_CACHE_DIR/node`` or ``~/.cache/k8s_backend/node``."""
    env = os.environ if environ is None else environ
    base = env.get("K8S_BACKEND_CACHE_DIR") or str(Path.home() / ".cache" / "k8s_backend")
    return Path(base) / "node"


def missing_debian_packages(packages: Sequence[str]) -> list[str]:
    """The packages of ``packages`` that dpkg does not list as installed (all of them without dpkg)."""
    missing = []
    for package in packages:
        # dpkg-query is found on PATH, as apt-get is (bandit B607 accepted).
        try:
            out = subprocess.run(  # nosec B607
                ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, check=False
            ).stdout
        except OSError:
            return list(packages)
        if "install ok installed" not in out:
            missing.append(package)
    return missing


def ensure_debian_packages(
    packages: Mapping[str, str], progress: Callable[[str], None], *, install: bool = True
) -> None:
    """Install the missing ``packages`` (name -> what needs it) with apt-get when running as root on
    Debian; otherwise :class:`BuildError` naming them and the command to run."""
    missing = missing_debian_packages(list(packages))
    if not missing:
        return
    why = "; ".join(f"{name} for {packages[name]}" for name in missing)
    command = f"apt-get install -y {' '.join(missing)}"
    apt = shutil.which("apt-get")
    if not install or apt is None or os.geteuid() != 0:
        raise MissingDependency(f"missing Debian packages ({why}): run `{command}` as root")
    progress(f"installing {', '.join(missing)} ({why}) with `{command}`...")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    proc = subprocess.run([apt, "install", "-y", "-q", *missing], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-10:])
        raise MissingDependency(f"`{command}` failed (exit {proc.returncode}); install them by hand:\n{tail}")


@attrs.frozen
class NodeBinaries:
    """Paths of a built node's executables."""

    directory: Path

    def path(self, name: str) -> Path:
        """The executable ``name`` (``kubelet``, ``containerd``, ... or a CNI plugin's name)."""
        for binary in NODE_BINARIES:
            if binary.name == name:
                return self.directory / binary.key
        raise ValueError(f"unknown node binary {name!r}; expected one of {[b.name for b in NODE_BINARIES]}")

    @property
    def cni_dir(self) -> Path:
        """The directory of the CNI plugins (containerd's ``bin_dirs``)."""
        return self.directory / CNI_DIR

    @property
    def bin_dir(self) -> Path:
        """kubelet, containerd, the shim, ctr and runc (containerd finds the shim and runc on PATH)."""
        return self.directory


class NodeBuilder:
    """Builds the node's pinned binaries into the cache, or finds them there.

    ``progress`` receives one line per binary started and finished.
    """

    def __init__(
        self,
        *,
        cache_dir: Path | None = None,
        environ: Mapping[str, str] | None = None,
        progress: Callable[[str], None] | None = None,
        install_packages: bool = True,
    ) -> None:
        self._environ = dict(os.environ if environ is None else environ)
        root = cache_dir if cache_dir is not None else node_cache_root(self._environ)
        self.directory = root / KUBERNETES_VERSION
        self._progress = progress or (lambda line: log.info("%s", line))
        self._install = install_packages

    @property
    def binaries(self) -> NodeBinaries:
        return NodeBinaries(self.directory)

    def manifest(self) -> dict[str, str]:
        """What :data:`MANIFEST` records: binary key -> the version it was built from."""
        try:
            data = json.loads((self.directory / MANIFEST).read_text())
        except (OSError, ValueError):
            return {}
        built = data.get("binaries") if isinstance(data, dict) else None
        return {str(k): str(v) for k, v in built.items()} if isinstance(built, dict) else {}

    def missing(self) -> list[Binary]:
        """The binaries absent from the cache, or built from another version than pinned."""
        manifest = self.manifest()
        return [
            b for b in NODE_BINARIES
            if manifest.get(b.key) != b.version or not os.access(self.directory / b.key, os.X_OK)
        ]  # fmt: skip

    def cached(self) -> NodeBinaries | None:
        """The cached binaries when all are there at their pinned versions, else None."""
        return self.binaries if not self.missing() else None

    def ensure(self) -> NodeBinaries:
        """The cached binaries, building the missing or stale ones first."""
        missing = self.missing()
        if not missing:
            return self.binaries
        go = find_go(self._environ)
        if any(b.cgo for b in missing):
            ensure_debian_packages(RUNC_PACKAGES, self._progress, install=self._install)
        started = time.monotonic()
        self._progress(
            f"building the node into {self.directory} ({', '.join(b.key for b in missing)}); "
            "a cold build takes ~15 minutes on 2 cores"
        )
        seconds: dict[str, float] = {}
        for binary in missing:
            begun = time.monotonic()
            self._progress(f"building {binary.key} {binary.version} ({binary.package})...")
            if binary in KUBERNETES_BINARIES:
                self._build_kubernetes(go, binary)
            else:
                self._go_install(go, binary)
            seconds[binary.key] = round(time.monotonic() - begun, 1)
            self._record(binary, seconds[binary.key])
            self._progress(f"built {binary.key} in {seconds[binary.key]:.0f} s")
        self._check_kubelet_version()
        self._progress(f"node ready in {time.monotonic() - started:.0f} s: {self.directory}")
        return self.binaries

    # -- builds ---------------------------------------------------------------------------------------

    def _build_kubernetes(self, go: str, binary: Binary) -> None:
        module = self.directory.parent / "build" / f"kubelet-{KUBERNETES_VERSION}"
        module.mkdir(parents=True, exist_ok=True)
        # The build tag keeps this file out of every build; it only pins the requirements for tidy.
        imports = "".join(f'import _ "{b.package}"\n' for b in KUBERNETES_BINARIES)
        tools = f"//go:build tools\n\npackage tools\n\n{imports}"
        tools_file = module / "tools.go"
        if not (module / "go.sum").exists() or not tools_file.exists() or tools_file.read_text() != tools:
            (module / "go.mod").write_text(kubernetes_go_mod("k8s-backend.local/node-build"))
            tools_file.write_text(tools)
            self._go(go, module, ["mod", "tidy"], "go mod tidy (kubelet, kubectl)", cgo=False, mod=True)
        partial = self._partial(binary)
        ldflags = kube_ldflags(KUBERNETES_VERSION)
        self._go(go, module, ["build", "-o", str(partial), "-ldflags", ldflags, binary.package],
                 f"go build {binary.name}", cgo=False, mod=True)  # fmt: skip
        partial.replace(self.directory / binary.key)

    def _go_install(self, go: str, binary: Binary) -> None:
        gobin = self.directory / f".gobin-{binary.name}"
        shutil.rmtree(gobin, ignore_errors=True)
        gobin.mkdir(parents=True)
        args = ["install", "-ldflags", binary.ldflags]
        if binary.tags:
            args += ["-tags", binary.tags]
        args.append(f"{binary.package}@{binary.version}")
        self._go(go, gobin, args, f"go install {binary.key}", cgo=binary.cgo, mod=False, gobin=gobin)
        built = gobin / Path(binary.package).name
        target = self.directory / binary.key
        target.parent.mkdir(parents=True, exist_ok=True)
        # Moved into place only when complete, so an interrupted build never leaves a half binary.
        built.replace(target)
        shutil.rmtree(gobin, ignore_errors=True)

    def _partial(self, binary: Binary) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        return self.directory / f".{binary.name}.partial"

    def _go(
        self,
        go: str,
        cwd: Path,
        args: list[str],
        what: str,
        *,
        cgo: bool,
        mod: bool,
        gobin: Path | None = None,
    ) -> str:
        env = dict(self._environ)
        env.update(CGO_ENABLED="1" if cgo else "0", GOTOOLCHAIN="local")
        if mod:
            env["GOFLAGS"] = "-mod=mod"
        else:
            env.pop("GOFLAGS", None)  # `go install pkg@version` refuses -mod
        if gobin is not None:
            env["GOBIN"] = str(gobin)
        proc = subprocess.run([go, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-30:])
            raise BuildError(f"{what} failed in {cwd} (exit {proc.returncode}):\n{tail}")
        return proc.stdout

    def _record(self, binary: Binary, seconds: float) -> None:
        path = self.directory / MANIFEST
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        data.setdefault("binaries", {})[binary.key] = binary.version
        data.setdefault("seconds", {})[binary.key] = seconds
        data["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")

    def _check_kubelet_version(self) -> None:
        kubelet = self.directory / KUBELET.key
        out = subprocess.run([str(kubelet), "--version"], capture_output=True, text=True, check=False).stdout
        if re.search(rf"(?<![\w.]){re.escape(KUBERNETES_VERSION)}(?![\w.])", out) is None:
            raise BuildError(f"{kubelet} reports {out.strip()!r}, not {KUBERNETES_VERSION}")
