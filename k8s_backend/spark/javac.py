"""Compile the bridge jar with ``javac`` against the jars of a pyspark installation.

Standard library only: ``setup.py`` loads this file by path at build time, when neither this package's
dependencies nor (under PEP 517 build isolation) pyspark itself can be imported.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

JAR_NAME = "k8s-backend-bridge.jar"
BUILD_INFO = "io/k8sbackend/bridge/build.properties"
SERVICE_FILE = "META-INF/services/org.apache.spark.scheduler.ExternalClusterManager"
SOURCE_DIR = Path(__file__).resolve().parent / "java"
JDK_HINT = (
    "install a JDK 17 or newer (for example `apt-get install openjdk-17-jdk-headless`, "
    "`brew install openjdk@17`, or `conda install -c conda-forge openjdk=17`) and put its bin/ on PATH "
    "or set JAVA_HOME"
)


class JarBuildError(Exception):
    """The bridge jar cannot be built here; the message says what to install or set."""


def find_javac() -> Path | None:
    """``$JAVA_HOME/bin/javac`` if it exists, else ``javac`` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / ("javac.exe" if os.name == "nt" else "javac")
        if candidate.is_file():
            return candidate
    found = shutil.which("javac")
    return Path(found) if found else None


def pyspark_jars_candidates() -> list[Path]:
    """Where a pyspark installation's jars may be, most specific first.

    The importable pyspark comes first; then the site-packages of this interpreter and of its base
    interpreter, which is where an isolated build environment can still see the user's pyspark.
    """
    candidates: list[Path] = []
    try:
        import pyspark

        candidates.append(Path(pyspark.__file__).resolve().parent / "jars")
    except ImportError:
        pass
    schemes = [sysconfig.get_paths()]
    base = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}
    schemes.append(sysconfig.get_paths(vars=base))
    for paths in schemes:
        for key in ("purelib", "platlib"):
            candidates.append(Path(paths[key]) / "pyspark" / "jars")
    unique: list[Path] = []
    for path in candidates:
        if path not in unique:
            unique.append(path)
    return unique


def spark_version_of(jars_dir: Path) -> tuple[str, str] | None:
    """(Spark version, Scala binary version) read from the ``spark-core_<scala>-<version>.jar`` name."""
    for jar in sorted(jars_dir.glob("spark-core_*.jar")):
        match = re.fullmatch(r"spark-core_(\d+\.\d+)-(.+)\.jar", jar.name)
        if match:
            return match.group(2), match.group(1)
    return None


def find_pyspark_jars(required_major: int = 4) -> Path | None:
    """The first candidate jars folder of a pyspark whose Spark major version is ``required_major``."""
    for path in pyspark_jars_candidates():
        version = spark_version_of(path) if path.is_dir() else None
        if version and version[0].split(".")[0] == str(required_major):
            return path
    return None


def source_digest(source_dir: Path = SOURCE_DIR) -> str:
    """A digest of the Java sources and service file, recorded in the jar to detect a stale build."""
    digest = hashlib.sha256()
    for path in sorted(p for p in source_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(source_dir).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def read_build_info(jar: Path) -> dict[str, str]:
    """The ``build.properties`` recorded in a bridge jar ({} if absent or unreadable)."""
    try:
        with zipfile.ZipFile(jar) as archive:
            text = archive.read(BUILD_INFO).decode()
    except (OSError, KeyError, zipfile.BadZipFile):
        return {}
    info: dict[str, str] = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            info[key.strip()] = value.strip()
    return info


def build_jar(
    output: Path,
    jars_dir: Path,
    *,
    source_dir: Path = SOURCE_DIR,
    javac: Path | None = None,
) -> Path:
    """Compile the sources against ``jars_dir`` (Java 17 bytecode) and write the jar to ``output``.

    Raises :class:`JarBuildError` when javac or the pyspark jars are missing or compilation fails.
    """
    javac = javac or find_javac()
    if javac is None:
        raise JarBuildError(
            f"k8s_backend's Spark bridge jar must be compiled, but no javac was found: {JDK_HINT}."
        )
    version = spark_version_of(jars_dir)
    if version is None:
        raise JarBuildError(
            f"{jars_dir} holds no spark-core jar: install pyspark>=4,<5 (`pip install 'pyspark>=4,<5'`)."
        )
    sources = sorted(str(p) for p in source_dir.rglob("*.java"))
    if not sources:
        raise JarBuildError(f"no Java sources under {source_dir}")
    with tempfile.TemporaryDirectory(prefix="k8s-backend-bridge-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        command = [
            str(javac), "--release", "17", "-nowarn", "-encoding", "UTF-8",
            "-cp", str(jars_dir / "*"), "-d", str(classes), *sources,
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise JarBuildError(
                f"javac failed ({javac}, against {jars_dir}, Spark {version[0]}):\n{result.stderr.strip()}"
            )
        _write_jar(output, classes, source_dir, spark_version=version[0], scala_version=version[1])
    return output


def _write_jar(
    output: Path, classes: Path, source_dir: Path, *, spark_version: str, scala_version: str
) -> None:
    info = "".join(
        f"{key}={value}\n"
        for key, value in (
            ("sparkVersion", spark_version),
            ("scalaVersion", scala_version),
            ("sourceDigest", source_digest(source_dir)),
        )
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + f".{os.getpid()}.tmp")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nCreated-By: k8s_backend\r\n\r\n")
        jar.write(source_dir / SERVICE_FILE, SERVICE_FILE)
        jar.writestr(BUILD_INFO, info)
        for path in sorted(classes.rglob("*.class")):
            jar.write(path, path.relative_to(classes).as_posix())
    os.replace(partial, output)  # atomic, so a concurrent reader never sees half a jar
