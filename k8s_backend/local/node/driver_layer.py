"""The driver image's own layer: this checkout's k8s_backend wheel and its requirements, installed for the
Spark image's python3, the steps of ``docker/Dockerfile`` done on this machine.

As the Dockerfile does on ``apache/spark:<version>-python3``:

1. ``pip wheel --no-deps`` of this checkout (the wheel carries the Spark bridge jar, compiled here);
2. the wheel installed without its pyspark requirement (Spark and pyspark are the Spark image's, under
   ``/opt/spark``), and its other requirements (the wheel's ``Requires-Dist``) with theirs;
3. the image's ``PYTHONPATH`` naming ``/opt/spark/python`` and its py4j (:func:`driver_pythonpath`).

Containers here reach no package index, so pip runs on this machine: ``pip download`` and ``pip install
--target`` for the image's interpreter (CPython 3.11 on Debian 12's glibc, whatever this machine's Python
is), into a directory that becomes ``/usr/local/lib/python3.11/dist-packages``, where Debian's python3
finds what pip installs. The console scripts are written for ``/usr/bin/python3``.
"""

from __future__ import annotations

import configparser
import hashlib
import io
import os
import re
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from k8s_backend.local.control_plane.build import BuildError

IMAGE_PYTHON = "3.11"  # Debian 12's python3 (images.DEBIAN_SUITE): PySpark's workers match the driver's
IMAGE_GLIBC = (2, 36)  # Debian 12's glibc: the newest manylinux tag its python3 accepts
SITE_DIR = f"usr/local/lib/python{IMAGE_PYTHON}/dist-packages"
BIN_DIR = "usr/local/bin"
IMAGE_INTERPRETER = "/usr/bin/python3"
# Spark and pyspark are the Spark image's (/opt/spark); the wheel's requirement is left to it.
PROVIDED_BY_SPARK_IMAGE = frozenset({"pyspark"})
_MANYLINUX_ARCH = {"amd64": "x86_64", "arm64": "aarch64"}
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def checkout_root() -> Path:
    """The directory of this k8s_backend's ``setup.cfg``: the checkout the driver image is built from."""
    import k8s_backend

    root = Path(k8s_backend.__file__).resolve().parent.parent
    if not (root / "setup.cfg").is_file():
        raise BuildError(
            f"the driver image is built from a checkout of k8s_backend (setup.cfg beside the package); "
            f"this k8s_backend is installed at {root}: run from a checkout, or build docker/Dockerfile"
        )
    return root


def build_wheel(root: Path, out_dir: Path, environ: Mapping[str, str]) -> Path:
    """``pip wheel --no-deps`` of the checkout at ``root`` into ``out_dir``; the wheel's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    argv = ["wheel", "--no-deps", "--quiet", "-w", str(out_dir), str(root)]
    _pip(argv, environ, "pip wheel of k8s_backend")
    wheels = sorted(out_dir.glob("k8s_backend-*.whl"))
    if len(wheels) != 1:
        found = [w.name for w in wheels]
        raise BuildError(f"pip wheel left {found} in {out_dir}, expected one k8s_backend wheel")
    return wheels[0]


def wheel_digest(wheel: Path) -> str:
    """A digest of what the wheel installs: its members' names and bytes, a jar's by its own members.

    Zip timestamps are left out (every ``pip wheel`` writes new ones, and javac's jar too), and so is
    ``RECORD``, which only lists the others' hashes."""
    sha = hashlib.sha256()
    with zipfile.ZipFile(wheel) as archive:
        for name in sorted(archive.namelist()):
            if name.endswith(".dist-info/RECORD"):
                continue
            data = archive.read(name)
            sha.update(name.encode() + b"\0")
            sha.update(_jar_digest(data) if name.endswith(".jar") else data)
            sha.update(b"\0")
    return sha.hexdigest()


def _jar_digest(data: bytes) -> bytes:
    sha = hashlib.sha256()
    with zipfile.ZipFile(io.BytesIO(data)) as jar:
        for name in sorted(jar.namelist()):
            sha.update(name.encode() + b"\0" + jar.read(name) + b"\0")
    return sha.digest()


def _dist_info(archive: zipfile.ZipFile, name: str) -> str:
    found = [n for n in archive.namelist() if n.count("/") == 1 and n.endswith(f".dist-info/{name}")]
    return archive.read(found[0]).decode() if found else ""


def requirements(wheel: Path) -> list[str]:
    """The wheel's ``Requires-Dist`` without extras' requirements and without what the Spark image has."""
    with zipfile.ZipFile(wheel) as archive:
        metadata = _dist_info(archive, "METADATA")
    found = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        requirement = line.split(":", 1)[1].strip()
        marker = requirement.split(";", 1)[1] if ";" in requirement else ""
        match = _NAME.match(requirement)
        if "extra" in marker or match is None or match[1].lower() in PROVIDED_BY_SPARK_IMAGE:
            continue
        found.append(requirement)
    return found


def console_scripts(wheel: Path) -> dict[str, str]:
    """The wheel's console scripts: name -> ``module:function``."""
    with zipfile.ZipFile(wheel) as archive:
        text = _dist_info(archive, "entry_points.txt")
    parser = configparser.ConfigParser(delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # names are case-sensitive
    parser.read_string(text)
    return dict(parser["console_scripts"]) if parser.has_section("console_scripts") else {}


def target_args(architecture: str) -> list[str]:
    """pip's options selecting wheels for the image's interpreter instead of this one (pip accepts
    only the manylinux tags it is given, so each one up to Debian 12's glibc is named)."""
    arch = _MANYLINUX_ARCH.get(architecture, architecture)
    major, newest = IMAGE_GLIBC
    platforms = [f"manylinux_{major}_{minor}_{arch}" for minor in range(newest, 16, -1)]
    platforms += [f"manylinux2014_{arch}", f"manylinux2010_{arch}", f"manylinux1_{arch}"]
    version = IMAGE_PYTHON.replace(".", "")
    args = ["--only-binary=:all:", "--implementation", "cp", "--python-version", IMAGE_PYTHON,
            "--abi", f"cp{version}", "--abi", "abi3", "--abi", "none"]  # fmt: skip
    for platform in platforms:
        args += ["--platform", platform]
    return args


def install(
    wheel: Path, target: Path, work: Path, environ: Mapping[str, str], architecture: str
) -> list[str]:
    """Download the wheel's requirements for the image's interpreter and install them and the wheel
    into ``target`` (no bytecode: the image's python3 compiles nothing it cannot write); the
    distributions installed (``name-version``)."""
    downloads = work / "requirements"
    selection = target_args(architecture)
    wanted = requirements(wheel)
    if wanted:
        _pip(["download", "--quiet", *selection, "-d", str(downloads), *wanted], environ,
             f"pip download of k8s_backend's requirements ({', '.join(wanted)})")  # fmt: skip
    wheels = sorted(str(p) for p in downloads.glob("*.whl")) if downloads.is_dir() else []
    argv = ["install", "--quiet", "--no-compile", "--no-deps", "--no-index", *selection,
            "--target", str(target), *wheels, str(wheel)]  # fmt: skip
    _pip(argv, environ, "pip install --target of the driver layer")
    return sorted(p.name[: -len(".dist-info")] for p in target.glob("*.dist-info"))


def _pip(args: list[str], environ: Mapping[str, str], what: str) -> None:
    env = {**environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    argv = [sys.executable, "-m", "pip", *args]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-20:])
        raise BuildError(f"{what} failed (exit {proc.returncode}):\n{tail}")


def console_script(entry: str) -> bytes:
    """A console script for the image's python3 (pip writes this machine's interpreter into its own)."""
    module, _, function = entry.partition(":")
    return (
        f"#!{IMAGE_INTERPRETER}\nimport sys\nfrom {module.strip()} import {function.strip()}\n"
        f"sys.exit({function.strip()}())\n"
    ).encode()


def layer_entries(
    target: Path, scripts: Mapping[str, str]
) -> Iterator[tuple[tarfile.TarInfo, io.BytesIO | None]]:
    """The layer's entries: ``target`` as the image's dist-packages (root's, readable by every user, as
    pip installs as root in the Dockerfile), pip's ``bin`` replaced by ``scripts`` in /usr/local/bin."""
    now = int(time.time())
    for directory in _parents(SITE_DIR):
        yield _entry(directory, tarfile.DIRTYPE, 0o755, now)
    for path in sorted(target.rglob("*")):
        relative = path.relative_to(target)
        if relative.parts[0] == "bin" or "__pycache__" in relative.parts or path.suffix == ".pyc":
            continue
        name = f"{SITE_DIR}/{relative.as_posix()}"
        if path.is_symlink():
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mtime = tarfile.SYMTYPE, os.readlink(path), now
            yield info, None
        elif path.is_dir():
            yield _entry(name, tarfile.DIRTYPE, 0o755, now)
        else:
            mode = 0o755 if os.access(path, os.X_OK) else 0o644
            yield _entry(name, tarfile.REGTYPE, mode, now, path.read_bytes())
    for name, entry in sorted(scripts.items()):
        yield _entry(f"{BIN_DIR}/{name}", tarfile.REGTYPE, 0o755, now, console_script(entry))


def _parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _entry(
    name: str, kind: bytes, mode: int, mtime: int, data: bytes = b""
) -> tuple[tarfile.TarInfo, io.BytesIO | None]:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = kind, mode, mtime
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    if kind == tarfile.REGTYPE:
        info.size = len(data)
        return info, io.BytesIO(data)
    return info, None


def write_layer(target: Path, scripts: Mapping[str, str], layer: Path) -> None:
    """The layer's tar at ``layer``, written beside it first so that no half layer is ever cached."""
    partial = layer.with_name(f"{layer.name}.{os.getpid()}.partial")
    with tarfile.open(partial, "w") as archive:
        for info, data in layer_entries(target, scripts):
            archive.addfile(info, data)
    partial.replace(layer)


def driver_pythonpath(pyspark_dir: Path) -> str:
    """``/opt/spark/python`` and py4j's zip, as Spark's launcher puts them on the path (the Dockerfile's
    ``PYTHONPATH``): the image's pyspark is Spark's own, not a pip distribution."""
    zips = sorted((pyspark_dir / "python" / "lib").glob("py4j-*-src.zip"))
    if len(zips) != 1:
        raise BuildError(f"expected one py4j-*-src.zip in {pyspark_dir / 'python' / 'lib'}, found {zips}")
    return f"/opt/spark/python:/opt/spark/python/lib/{zips[0].name}"
