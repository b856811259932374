"""Builds a pinned Kubernetes control plane (kube-apiserver, kube-scheduler, kube-controller-manager and
etcd) from the official Go modules, and caches the binaries.

Nothing of those projects is vendored here: a throwaway Go module is generated in a build directory
under the cache; it requires ``k8s.io/kubernetes`` (whose go.mod points its 33 staging modules at
``./staging/...``, a path a module zip leaves out, so each is replaced with its published ``v0.X.Y``)
or ``go.etcd.io/etcd/server/v3``, and ``go build`` compiles the commands of those modules. The Go
module and build caches stay where Go keeps them by default, so a second build is quick.

Binaries land in ``$K8S_BACKEND_CACHE_DIR/control-plane/<version>/`` (default ``~/.cache/k8s_backend``)
and are reused when each one is there and reports the expected version.
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
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

log = logging.getLogger(__name__)

KUBERNETES_VERSION = "v1.37.2"
ETCD_VERSION = "v3.7.3"
GO_MIN_VERSION = (1, 26)

KUBE_COMMANDS = ("kube-apiserver", "kube-scheduler", "kube-controller-manager")
ETCD = "etcd"
ALL_BINARIES = (*KUBE_COMMANDS, ETCD)
BUILD_RECORD = "build.json"  # written next to the binaries by a build: what it built and how long it took

# The "=> ./staging/src/k8s.io/..." lines of k8s.io/kubernetes v1.37.2's go.mod. A release that adds or
# drops a staging module changes this list; build() checks it against the downloaded go.mod.
STAGING_MODULES = (
    "api", "apiextensions-apiserver", "apimachinery", "apiserver", "cli-runtime", "client-go",
    "cloud-provider", "cluster-bootstrap", "code-generator", "component-base", "component-helpers",
    "controller-manager", "cri-api", "cri-client", "cri-streaming", "csi-translation-lib",
    "dynamic-resource-allocation", "endpointslice", "externaljwt", "kms", "kube-aggregator",
    "kube-controller-manager", "kube-proxy", "kube-scheduler", "kubectl", "kubelet", "metrics",
    "mount-utils", "pod-security-admission", "sample-apiserver", "sample-cli-plugin", "sample-controller",
    "streaming",
)  # fmt: skip

_STAGING_LINE = re.compile(r"^\s*(k8s\.io/[\w.-]+)\s*=>\s*\./staging/", re.MULTILINE)
_GO_VERSION = re.compile(r"\bgo(\d+)\.(\d+)")


class BuildError(Exception):
    """The control plane could not be built (or Go is missing); the message says what to do."""


@attrs.frozen
class ControlPlaneBinaries:
    """Paths of a built control plane's executables, all of one pinned version."""

    directory: Path
    kubernetes_version: str
    etcd_version: str

    def path(self, name: str) -> Path:
        """The executable ``name`` (one of :data:`ALL_BINARIES`)."""
        if name not in ALL_BINARIES:
            raise ValueError(f"unknown control-plane binary {name!r}; expected one of {ALL_BINARIES}")
        return self.directory / name

    @property
    def kube_apiserver(self) -> Path:
        return self.path("kube-apiserver")

    @property
    def kube_scheduler(self) -> Path:
        return self.path("kube-scheduler")

    @property
    def kube_controller_manager(self) -> Path:
        return self.path("kube-controller-manager")

    @property
    def etcd(self) -> Path:
        return self.path(ETCD)


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """``$K8S_BACKEND_CACHE_DIR/control-plane`` or ``~/.cache/k8s_backend/control-plane``."""
    env = os.environ if environ is None else environ
    base = env.get("K8S_BACKEND_CACHE_DIR") or str(Path.home() / ".cache" / "k8s_backend")
    return Path(base) / "control-plane"


def missing_go_message(go: str = "go") -> str:
    """The one line shown when Go is not usable."""
    return (
        f"the real control plane needs Go >= {GO_MIN_VERSION[0]}.{GO_MIN_VERSION[1]} on PATH "
        f"(https://go.dev/dl/; looked for {go!r}); it builds kube-apiserver, kube-scheduler and "
        f"kube-controller-manager {KUBERNETES_VERSION} and etcd {ETCD_VERSION} from their Go modules"
    )


def find_go(environ: Mapping[str, str] | None = None) -> str:
    """The ``go`` executable (``$GO`` or on PATH), checked to be recent enough; else :class:`BuildError`."""
    env = os.environ if environ is None else environ
    name = env.get("GO", "go")
    go = shutil.which(name, path=env.get("PATH"))
    if go is None:
        raise BuildError(missing_go_message(name))
    try:
        out = subprocess.run([go, "version"], capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError) as error:
        raise BuildError(f"{missing_go_message(name)} ({go} version failed: {error})") from None
    match = _GO_VERSION.search(out)
    if match is None or (int(match[1]), int(match[2])) < GO_MIN_VERSION:
        raise BuildError(f"{missing_go_message(name)} (found: {out.strip()})")
    return go


def kube_ldflags(version: str) -> str:
    """``-ldflags`` for a ``k8s.io/kubernetes`` command reporting ``version`` (``--version``)."""
    major, minor = version[1:].split(".")[:2]
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    flags = ["-s", "-w"]
    # Both packages carry the version: component-base for /version and --version, client-go for
    # the user agent; hack/lib/version.sh sets both the same way.
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        for key, value in (
            ("gitVersion", version),
            ("gitMajor", major),
            ("gitMinor", minor),
            ("gitTreeState", "clean"),
            ("buildDate", date),
        ):
            flags.append(f"-X {package}.{key}={value}")
    return " ".join(flags)


def kubernetes_go_mod(module: str, version: str = KUBERNETES_VERSION) -> str:
    """A go.mod requiring ``k8s.io/kubernetes`` ``version`` with its staging modules replaced by their
    published ``v0.X.Y`` (a module zip leaves ``./staging`` out)."""
    staging = "".join(f"\tk8s.io/{name} => k8s.io/{name} v0{version[2:]}\n" for name in STAGING_MODULES)
    return f"module {module}\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes {version}\n\nreplace (\n{staging})\n"


class ControlPlaneBuilder:
    """Builds the pinned binaries into the cache, or finds them there.

    ``progress`` receives one line per binary started and finished (a cold build takes minutes).
    """

    def __init__(
        self,
        *,
        cache_dir: Path | None = None,
        kubernetes_version: str = KUBERNETES_VERSION,
        etcd_version: str = ETCD_VERSION,
        environ: Mapping[str, str] | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self._environ = dict(os.environ if environ is None else environ)
        self._kube_version = kubernetes_version
        self._etcd_version = etcd_version
        root = cache_dir if cache_dir is not None else cache_root(self._environ)
        self.directory = root / kubernetes_version
        self._progress = progress or (lambda line: log.info("%s", line))
        self._seconds: dict[str, float] = {}

    @property
    def binaries(self) -> ControlPlaneBinaries:
        """Where the binaries are (or will be once built)."""
        return ControlPlaneBinaries(self.directory, self._kube_version, self._etcd_version)

    def cached(self) -> ControlPlaneBinaries | None:
        """The cached binaries when every one exists and reports the pinned version, else None."""
        binaries = self.binaries
        if all(self._valid(binaries, name) for name in ALL_BINARIES):
            return binaries
        return None

    def ensure(self) -> ControlPlaneBinaries:
        """The cached binaries, building the missing or stale ones first."""
        binaries = self.binaries
        missing = [name for name in ALL_BINARIES if not self._valid(binaries, name)]
        if not missing:
            return binaries
        go = find_go(self._environ)
        started = time.monotonic()
        self._progress(
            f"building the control plane into {self.directory} ({', '.join(missing)}); "
            "a cold build takes ~10 minutes on 2 cores"
        )
        kube_missing = [name for name in KUBE_COMMANDS if name in missing]
        if kube_missing:
            module = self._prepare_module("kubernetes", self._kubernetes_go_mod(), go)
            for name in kube_missing:
                self._build(go, module, f"k8s.io/kubernetes/cmd/{name}", name, self._kube_ldflags())
        if ETCD in missing:
            module = self._prepare_module("etcd", self._etcd_go_mod(), go)
            self._build(go, module, "go.etcd.io/etcd/server/v3", ETCD, "-s -w")
        still = [name for name in missing if not self._valid(binaries, name)]
        if still:
            raise BuildError(f"built {', '.join(still)} but they do not report the pinned versions")
        total = time.monotonic() - started
        self._record({"built": sorted(missing), "seconds": round(total, 1), **self._seconds})
        self._progress(f"control plane ready in {total:.0f} s: {self.directory}")
        return binaries

    def recorded_build(self) -> dict[str, Any] | None:
        """What the last build into this cache recorded (:data:`BUILD_RECORD`: which binaries it built,
        the seconds in all and per binary, when), or None if nothing was recorded."""
        try:
            record = json.loads((self.directory / BUILD_RECORD).read_text())
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def _record(self, facts: dict[str, Any]) -> None:
        facts["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        try:
            (self.directory / BUILD_RECORD).write_text(json.dumps(facts, indent=1) + "\n")
        except OSError as error:  # the binaries are what matters; the record is for benchmarks
            log.warning("could not record the build time in %s: %s", self.directory, error)

    # -- the generated modules ------------------------------------------------------------------------

    def _kubernetes_go_mod(self) -> str:
        return kubernetes_go_mod("k8s-backend.local/control-plane-build", self._kube_version)

    def _etcd_go_mod(self) -> str:
        return (
            "module k8s-backend.local/etcd-build\n\ngo 1.26.0\n\n"
            f"require go.etcd.io/etcd/server/v3 {self._etcd_version}\n"
        )

    def _prepare_module(self, name: str, go_mod: str, go: str) -> Path:
        """Writes the throwaway module (go.mod and a tools file so ``go mod tidy`` keeps the requirements)."""
        module = self.directory.parent / "build" / f"{name}-{self._kube_version}-{self._etcd_version}"
        module.mkdir(parents=True, exist_ok=True)
        go_mod_path = module / "go.mod"
        if not go_mod_path.exists() or not (module / "go.sum").exists():
            go_mod_path.write_text(go_mod)
            packages = (
                [f"k8s.io/kubernetes/cmd/{cmd}" for cmd in KUBE_COMMANDS]
                if name == "kubernetes"
                else ["go.etcd.io/etcd/server/v3"]
            )
            imports = "".join(f'\t_ "{package}"\n' for package in packages)
            # The build tag keeps this file out of every build; it only pins the requirements for tidy.
            (module / "tools.go").write_text(f"//go:build tools\n\npackage tools\n\nimport (\n{imports})\n")
            self._go(go, module, ["mod", "tidy"], "go mod tidy")
        if name == "kubernetes":
            self._check_staging_list(go, module)
        return module

    def _check_staging_list(self, go: str, module: Path) -> None:
        out = self._go(
            go, module, ["mod", "download", "-json", f"k8s.io/kubernetes@{self._kube_version}"], "download"
        )
        match = re.search(r'"GoMod":\s*"([^"]+)"', out)
        if match is None:
            return
        upstream = set(_STAGING_LINE.findall(Path(match[1]).read_text()))
        ours = {f"k8s.io/{name}" for name in STAGING_MODULES}
        if upstream and upstream != ours:
            raise BuildError(
                f"k8s.io/kubernetes {self._kube_version} replaces other staging modules than pinned here: "
                f"missing {sorted(upstream - ours)}, extra {sorted(ours - upstream)}"
            )

    # -- go invocations -------------------------------------------------------------------------------

    def _kube_ldflags(self) -> str:
        return kube_ldflags(self._kube_version)

    def _build(self, go: str, module: Path, package: str, name: str, ldflags: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self.directory / name
        partial = self.directory / f".{name}.partial"
        started = time.monotonic()
        self._progress(f"building {name} ({package})...")
        self._go(go, module, ["build", "-o", str(partial), "-ldflags", ldflags, package], f"go build {name}")
        # Renamed into place only when complete, so an interrupted build never leaves a half binary.
        partial.replace(target)
        self._seconds[name] = round(time.monotonic() - started, 1)
        self._progress(f"built {name} in {self._seconds[name]:.0f} s")

    def _go(self, go: str, module: Path, args: list[str], what: str) -> str:
        env = dict(self._environ)
        env.update(GOFLAGS="-mod=mod", CGO_ENABLED="0", GOTOOLCHAIN="local")
        proc = subprocess.run([go, *args], cwd=module, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-30:])
            raise BuildError(f"{what} failed in {module} (exit {proc.returncode}):\n{tail}")
        return proc.stdout

    def _valid(self, binaries: ControlPlaneBinaries, name: str) -> bool:
        path = binaries.path(name)
        if not os.access(path, os.X_OK):
            return False
        expected = binaries.etcd_version.lstrip("v") if name == ETCD else binaries.kubernetes_version
        try:
            out = subprocess.run(
                [str(path), "--version"], capture_output=True, text=True, timeout=60, check=False
            ).stdout
        except (OSError, subprocess.SubprocessError):
            return False
        # "Kubernetes v1.37.2" / "etcd Version: 3.7.3"
        return re.search(rf"(?<![\w.]){re.escape(expected)}(?![\w.])", out) is not None
