"""The images a real node's pods run, built here without any registry, and cached.

- the pod sandbox image, under containerd's default name ``registry.k8s.io/pause:3.10.2``: one static Go
  binary (``image_files/pause.go``);
- the Spark image, following apache/spark's official recipe for the installed pyspark: a Debian 12 base
  made by ``mmdebstrap`` (a Java 17 JRE, python3, tini, gosu, libnss-wrapper, libnss3, procps, bash,
  net-tools), then Spark under ``/opt/spark`` taken from the installed pyspark (jars, bin, sbin,
  examples, data, python), user ``spark`` (uid/gid 185), ``WORKDIR /opt/spark/work-dir``, this
  package's ``/opt/entrypoint.sh`` and ``/opt/decom.sh``, ``/bin/sh`` being bash;
- the driver image of cluster mode: the Spark image plus a layer with this checkout's k8s_backend wheel
  and its requirements (:mod:`k8s_backend.local.node.driver_layer`, the steps of ``docker/Dockerfile``).

Each layer is an uncompressed tar in ``$K8S_BACKEND_CACHE_DIR/node-images/``, named by a hash of what
went into it, so a changed input rebuilds that layer only. :mod:`k8s_backend.local.node.oci` writes the
image archives ``ctr images import`` reads.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from importlib import metadata, resources
from pathlib import Path

import attrs

from k8s_backend.local.control_plane.build import BuildError, find_go
from k8s_backend.local.node import driver_layer
from k8s_backend.local.node.build import ensure_debian_packages
from k8s_backend.local.node.oci import ImageConfig, OciImage, architecture

log = logging.getLogger(__name__)

PAUSE_IMAGE = "registry.k8s.io/pause:3.10.2"  # containerd 2.4's default sandbox image
SPARK_UID = 185
SPARK_HOME = "/opt/spark"
WORK_DIR = "/opt/spark/work-dir"
JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"
DEBIAN_SUITE = "bookworm"  # Debian 12: its python3 is 3.11, as PySpark's workers must match the driver's
DEBIAN_MIRROR = "http://deb.debian.org/debian"
# apache/spark-docker's package list, on a Debian JRE instead of eclipse-temurin (krb5-user is left out:
# nothing here uses Kerberos, and its configuration asks questions).
SPARK_PACKAGES = (
    "openjdk-17-jre-headless", "python3", "tini", "gosu", "libnss-wrapper", "libnss3", "procps", "bash",
    "net-tools", "ca-certificates",
)  # fmt: skip
IMAGE_TOOLS = {"mmdebstrap": "the Spark image's Debian base"}
# Spark's distribution directories as the pyspark package carries them.
SPARK_DIRS = ("jars", "bin", "sbin", "examples", "data")
_NOT_PYTHON = {*SPARK_DIRS, "python", "licenses", "__pycache__"}
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def spark_image_name(version: str | None = None) -> str:
    """``docker.io/k8s-backend/spark:<pyspark version>``: fully qualified, as the CRI would write it."""
    return f"docker.io/k8s-backend/spark:{version or metadata.version('pyspark')}"


def driver_image_name(version: str | None = None) -> str:
    """``docker.io/k8s-backend/driver:<pyspark version>``, as docker/Dockerfile's tag."""
    return f"docker.io/k8s-backend/driver:{version or metadata.version('pyspark')}"


def images_cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """``$K8S_BACKEND_CACHE_DIR/node-images`` or ``~/.cache/k8s_backend/node-images``."""
    env = os.environ if environ is None else environ
    base = env.get("K8S_BACKEND_CACHE_DIR") or str(Path.home() / ".cache" / "k8s_backend")
    return Path(base) / "node-images"


def image_file(name: str) -> bytes:
    """One of the files shipped in ``k8s_backend/local/node/image_files``."""
    return (resources.files("k8s_backend.local.node") / "image_files" / name).read_bytes()


def _key(*parts: str | bytes) -> str:
    sha = hashlib.sha256()
    for part in parts:
        sha.update(part.encode() if isinstance(part, str) else part)
        sha.update(b"\0")
    return sha.hexdigest()[:16]


class ImageBuilder:
    """Builds (or finds in the cache) the layers of the node's images."""

    def __init__(
        self,
        *,
        cache_dir: Path | None = None,
        environ: Mapping[str, str] | None = None,
        progress: Callable[[str], None] | None = None,
        install_packages: bool = True,
    ) -> None:
        self._environ = dict(os.environ if environ is None else environ)
        self.directory = cache_dir if cache_dir is not None else images_cache_root(self._environ)
        self._progress = progress or (lambda line: log.info("%s", line))
        self._install = install_packages
        self.seconds: dict[str, float] = {}
        """Seconds each layer built by this builder took (cached layers are not listed)."""

    def missing(self) -> list[str]:
        """The layers not in the cache yet (a build makes them: minutes for the Debian base)."""
        base = self._debian_base_path()
        paths = {
            "pause": self._pause_path(image_file("pause.go")),
            "Debian base": base,
            "Spark": self._spark_layer_path(base),
        }
        return [name for name, path in paths.items() if not path.exists()]

    def _pause_path(self, source: bytes) -> Path:
        return self.directory / f"pause-{_key(source)}.tar"

    def _debian_base_path(self) -> Path:
        return self.directory / f"debian-base-{_key(*self._debian_command(Path('-')))}.tar"

    def _spark_layer_path(self, base: Path) -> Path:
        pyspark_dir = _pyspark_dir()
        version = metadata.version("pyspark")
        scripts = image_file("entrypoint.sh"), image_file("decom.sh")
        return self.directory / f"spark-{version}-{_key(base.name, str(pyspark_dir), *scripts)}.tar"

    def pause(self) -> OciImage:
        """The sandbox image."""
        source = image_file("pause.go")
        layer = self._pause_path(source)
        if not layer.exists():
            self._timed("pause", lambda: self._build_pause(source, layer))
        return OciImage(PAUSE_IMAGE, (layer,), ImageConfig(entrypoint=("/pause",), user="65535:65535"))

    def spark(self) -> OciImage:
        """The Spark image of the installed pyspark."""
        base = self._debian_base()
        layer = self._spark_layer(base)
        config = ImageConfig(
            entrypoint=("/opt/entrypoint.sh",),
            env={"PATH": PATH, "JAVA_HOME": JAVA_HOME, "SPARK_HOME": SPARK_HOME, "LANG": "C.UTF-8"},
            user=str(SPARK_UID),
            working_dir=WORK_DIR,
        )
        return OciImage(spark_image_name(), (base, layer), config)

    def driver(self, checkout: Path | None = None) -> OciImage:
        """The driver image: the Spark image plus this checkout's k8s_backend and its requirements, with
        ``PYTHONPATH`` naming Spark's pyspark and py4j. A wheel is built each time (seconds); the layer
        is rebuilt only when what the wheel installs changed.

        :param checkout: the k8s_backend checkout to build the wheel of (default: the one this k8s_backend
            is imported from; an installed, non-editable k8s_backend has none: a test run by tox, say).
        """
        spark = self.spark()
        layer = self._driver_layer(checkout or driver_layer.checkout_root())
        env = {**spark.config.env, "PYTHONPATH": driver_layer.driver_pythonpath(_pyspark_dir())}
        return OciImage(driver_image_name(), (*spark.layers, layer), attrs.evolve(spark.config, env=env))

    # -- layers ---------------------------------------------------------------------------------------

    def _timed(self, what: str, build: Callable[[], None]) -> None:
        started = time.monotonic()
        self._progress(f"building the {what} layer...")
        build()
        self.seconds[what] = round(time.monotonic() - started, 1)
        self._progress(f"built the {what} layer in {self.seconds[what]:.0f} s")

    def _build_pause(self, source: bytes, layer: Path) -> None:
        go = find_go(self._environ)
        module = self.directory / "build" / "pause"
        module.mkdir(parents=True, exist_ok=True)
        (module / "go.mod").write_text("module k8s-backend.local/pause\n\ngo 1.26.0\n")
        (module / "main.go").write_bytes(source)
        env = {**self._environ, "CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOFLAGS": ""}
        proc = subprocess.run([go, "build", "-ldflags", "-s -w", "-o", "pause", "."], cwd=module, env=env,
                              capture_output=True, text=True, check=False)  # fmt: skip
        if proc.returncode != 0:
            raise BuildError(f"go build of the pause binary failed in {module}:\n{proc.stderr[-2000:]}")
        partial = layer.with_suffix(".partial")
        with tarfile.open(partial, "w") as archive:
            archive.add(str(module / "pause"), arcname="pause", filter=_root_owned(0o755))
        partial.replace(layer)

    def _debian_command(self, target: Path) -> list[str]:
        excludes = [
            "--dpkgopt=path-exclude=/usr/share/man/*", "--dpkgopt=path-exclude=/usr/share/doc/*",
            "--dpkgopt=path-include=/usr/share/doc/*/copyright", "--dpkgopt=path-exclude=/usr/share/locale/*",
        ]  # fmt: skip
        # Java's postinst links its man page with update-alternatives, which fails without the directory.
        hook = '--setup-hook=mkdir -p "$1/usr/share/man/man1"'
        return [
            "mmdebstrap", "--variant=minbase", f"--include={','.join(SPARK_PACKAGES)}", *excludes, hook,
            "--format=tar", DEBIAN_SUITE, str(target),
            f"deb {DEBIAN_MIRROR} {DEBIAN_SUITE} main", f"deb {DEBIAN_MIRROR} {DEBIAN_SUITE}-updates main",
            f"deb {DEBIAN_MIRROR}-security {DEBIAN_SUITE}-security main",
        ]  # fmt: skip

    def _debian_base(self) -> Path:
        layer = self._debian_base_path()
        if layer.exists():
            return layer

        def build() -> None:
            ensure_debian_packages(IMAGE_TOOLS, self._progress, install=self._install)
            partial = layer.with_suffix(".partial")
            self.directory.mkdir(parents=True, exist_ok=True)
            proc = subprocess.run(self._debian_command(partial), capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                partial.unlink(missing_ok=True)
                tail = "\n".join(proc.stderr.strip().splitlines()[-20:])
                raise BuildError(f"mmdebstrap of the Spark image's Debian base failed:\n{tail}")
            partial.replace(layer)

        self._timed("Debian base", build)
        return layer

    def _spark_layer(self, base: Path) -> Path:
        pyspark_dir = _pyspark_dir()
        version = metadata.version("pyspark")
        entrypoint, decom = image_file("entrypoint.sh"), image_file("decom.sh")
        layer = self._spark_layer_path(base)
        if layer.exists():
            return layer

        def build() -> None:
            partial = layer.with_suffix(".partial")
            with tarfile.open(partial, "w") as archive:
                for info, data in _spark_files(base, pyspark_dir, entrypoint, decom):
                    archive.addfile(info, data)
            partial.replace(layer)

        self._timed(f"Spark {version}", build)
        return layer

    def _driver_layer(self, checkout: Path) -> Path:
        builds = self.directory / "build"
        builds.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="driver-", dir=builds))  # builds may run side by side
        try:
            wheel = driver_layer.build_wheel(checkout, work / "wheel", self._environ)
            key = _key(driver_layer.wheel_digest(wheel), driver_layer.IMAGE_PYTHON, architecture())
            layer = self.directory / f"driver-{metadata.version('pyspark')}-{key}.tar"
            if layer.exists():
                return layer

            def build() -> None:
                target = work / "dist-packages"
                installed = driver_layer.install(wheel, target, work, self._environ, architecture())
                self._progress(f"the driver layer installs {', '.join(installed)}")
                driver_layer.write_layer(target, driver_layer.console_scripts(wheel), layer)

            self._timed("driver", build)
            return layer
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _pyspark_dir() -> Path:
    """The installed pyspark package's directory (found, not imported: only spark/ imports pyspark)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise BuildError("the Spark image is made from the installed pyspark: pip install pyspark")
    return Path(spec.origin).parent


def _root_owned(mode: int) -> Callable[[tarfile.TarInfo], tarfile.TarInfo]:
    def apply(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        info.mode = mode
        return info

    return apply


def _entry(
    name: str, kind: bytes, mode: int, uid: int = 0, data: bytes = b"", link: str = ""
) -> tuple[tarfile.TarInfo, io.BytesIO | None]:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.uid, info.gid = kind, mode, uid, uid
    info.mtime = int(time.time())
    if kind == tarfile.SYMTYPE:
        info.linkname = link
    if kind == tarfile.REGTYPE:
        info.size = len(data)
        return info, io.BytesIO(data)
    return info, None


def _base_file(base: Path, name: str) -> bytes:
    with tarfile.open(base) as archive:
        for member in archive:
            if member.name.lstrip("./") == name:
                handle = archive.extractfile(member)
                if handle is not None:
                    return handle.read()
    raise BuildError(f"{name} is missing from the Debian base {base}")


def _spark_files(
    base: Path, pyspark_dir: Path, entrypoint: bytes, decom: bytes
) -> Iterator[tuple[tarfile.TarInfo, io.IOBase | None]]:
    """The Spark layer's entries: the spark user, /opt/spark from pyspark, the scripts, sh as bash."""
    passwd = (
        _base_file(base, "etc/passwd") + f"spark:x:{SPARK_UID}:{SPARK_UID}::{SPARK_HOME}:/bin/sh\n".encode()
    )
    group = _base_file(base, "etc/group") + f"spark:x:{SPARK_UID}:\n".encode()
    # Group-writable passwd (root group), as the official image: the random-uid case may append to it.
    yield _entry("etc/passwd", tarfile.REGTYPE, 0o664, data=passwd)
    yield _entry("etc/group", tarfile.REGTYPE, 0o644, data=group)
    yield _entry("usr/bin/sh", tarfile.SYMTYPE, 0o777, link="bash")
    yield _entry("opt", tarfile.DIRTYPE, 0o755)
    yield _entry("opt/entrypoint.sh", tarfile.REGTYPE, 0o755, data=entrypoint)
    yield _entry("opt/decom.sh", tarfile.REGTYPE, 0o755, data=decom)
    for directory in ("opt/spark", "opt/spark/python", "opt/spark/python/lib"):
        yield _entry(directory, tarfile.DIRTYPE, 0o755, SPARK_UID)
    yield _entry("opt/spark/work-dir", tarfile.DIRTYPE, 0o775, SPARK_UID)
    yield _entry("opt/spark/RELEASE", tarfile.REGTYPE, 0o644, SPARK_UID)
    for name in SPARK_DIRS:
        yield from _tree(pyspark_dir / name, f"opt/spark/{name}")
    yield from _tree(pyspark_dir / "python" / "lib", "opt/spark/python/lib", top=False)
    yield _entry("opt/spark/python/pyspark", tarfile.DIRTYPE, 0o755, SPARK_UID)
    for child in sorted(pyspark_dir.iterdir()):
        if child.name not in _NOT_PYTHON:
            yield from _tree(child, f"opt/spark/python/pyspark/{child.name}")


def _tree(
    path: Path, arcname: str, *, top: bool = True
) -> Iterator[tuple[tarfile.TarInfo, io.IOBase | None]]:
    """Entries for ``path`` (and below), owned by spark, without bytecode caches."""
    if path.name == "__pycache__":
        return
    if path.is_dir() and not path.is_symlink():
        if top:
            yield _entry(arcname, tarfile.DIRTYPE, 0o755, SPARK_UID)
        for child in sorted(path.iterdir()):
            yield from _tree(child, f"{arcname}/{child.name}")
        return
    if path.suffix == ".pyc":
        return
    mode = 0o755 if os.access(path, os.X_OK) else 0o644
    data = path.read_bytes()
    yield _entry(arcname, tarfile.REGTYPE, mode, SPARK_UID, data=data)


def have_image_tools() -> str | None:
    """Why the images cannot be built here (one line), or None."""
    missing = [tool for tool in IMAGE_TOOLS if shutil.which(tool) is None]
    if missing and (shutil.which("apt-get") is None or os.geteuid() != 0):
        return f"the node's images need {', '.join(missing)} (apt-get install -y {' '.join(missing)})"
    return None
