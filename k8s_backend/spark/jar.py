"""Find the bridge jar for the installed pyspark, building it on first use when needed.

Order: the jar shipped in the package (``k8s_backend/spark/jars``), if it was built from these sources
for the installed pyspark's Scala line; else one built earlier into the user cache; else build one now
with ``javac`` into the cache (about two seconds). A wheel built where a JDK and pyspark were present
carries the jar, so drivers on JRE-only images never compile anything.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

import attrs

from k8s_backend.errors import K8sBackendError
from k8s_backend.spark import javac

log = logging.getLogger(__name__)

PACKAGED_JAR = Path(__file__).resolve().parent / "jars" / javac.JAR_NAME
SUPPORTED_MAJOR = 4
SUPPORTED_SCALA = "2.13"
CACHE_ENV = "K8S_BACKEND_CACHE_DIR"


class BridgeJarError(K8sBackendError, RuntimeError):
    """No usable bridge jar, and none can be built here; the message says what to install."""


class UnsupportedPysparkError(K8sBackendError, RuntimeError):
    """The installed pyspark is not a version the bridge supports."""


@attrs.frozen
class PysparkInstall:
    """The installed pyspark: its version, Scala line and jars folder."""

    version: str
    scala_version: str
    jars_dir: Path


def installed_pyspark() -> PysparkInstall:
    """The importable pyspark, checked to be 4.x on Scala 2.13.

    Raises :class:`UnsupportedPysparkError` naming the version found and the one to install.
    """
    try:
        import pyspark
    except ImportError as error:
        raise UnsupportedPysparkError(
            "k8s_backend.spark needs pyspark: `pip install 'pyspark>=4,<5'`"
        ) from error
    jars_dir = spark_jars_dir(Path(pyspark.__file__).resolve().parent, os.environ)
    found = javac.spark_version_of(jars_dir) if jars_dir.is_dir() else None
    version = str(getattr(pyspark, "__version__", found[0] if found else "unknown"))
    scala = found[1] if found else "unknown"
    check_supported(version, scala, where=str(jars_dir))
    return PysparkInstall(version=version, scala_version=scala, jars_dir=jars_dir)


def spark_jars_dir(pyspark_dir: Path, environ: Mapping[str, str]) -> Path:
    """Spark's jars: in the package of pip's pyspark, else ``$SPARK_HOME/jars``. A Spark distribution
    (the apache/spark images: pyspark is ``/opt/spark/python/pyspark``) keeps them there, as
    pyspark's own launcher finds them."""
    packaged = pyspark_dir / "jars"
    spark_home = environ.get("SPARK_HOME")
    if not packaged.is_dir() and spark_home and (Path(spark_home) / "jars").is_dir():
        return Path(spark_home) / "jars"
    return packaged


def check_supported(version: str, scala_version: str, *, where: str = "") -> None:
    """Raise :class:`UnsupportedPysparkError` unless this is pyspark 4.x on Scala 2.13."""
    major = version.split(".")[0]
    if major != str(SUPPORTED_MAJOR) or scala_version != SUPPORTED_SCALA:
        location = f" at {where}" if where else ""
        raise UnsupportedPysparkError(
            f"k8s_backend's Spark bridge supports pyspark {SUPPORTED_MAJOR}.x (Scala {SUPPORTED_SCALA}); "
            f"found pyspark {version} (Scala {scala_version}){location}: install a supported one with "
            f"`pip install 'pyspark>={SUPPORTED_MAJOR},<{SUPPORTED_MAJOR + 1}'`"
        )


def cache_dir() -> Path:
    """Where jars built at run time go: ``$K8S_BACKEND_CACHE_DIR``, else the user cache folder."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "k8s_backend"


def is_usable(jar: Path, pyspark: PysparkInstall, digest: str | None) -> bool:
    """Built for this pyspark's Scala line and major version, from these sources (when they ship)."""
    if not jar.is_file():
        return False
    info = javac.read_build_info(jar)
    if info.get("scalaVersion") != pyspark.scala_version:
        return False
    if info.get("sparkVersion", "").split(".")[0] != pyspark.version.split(".")[0]:
        return False
    return digest is None or info.get("sourceDigest") == digest


def bridge_jar(*, build: bool = True) -> Path:
    """The path of a bridge jar that works with the installed pyspark.

    ``build=False`` never compiles. Raises :class:`UnsupportedPysparkError` for an unsupported
    pyspark and :class:`BridgeJarError` when no jar is usable and none can be built.
    """
    pyspark = installed_pyspark()
    digest = javac.source_digest() if javac.SOURCE_DIR.is_dir() else None
    if is_usable(PACKAGED_JAR, pyspark, digest):
        return PACKAGED_JAR
    cached = cache_dir() / f"spark-{pyspark.version}" / f"{digest or 'release'}" / javac.JAR_NAME
    if is_usable(cached, pyspark, digest):
        return cached
    compiler = javac.find_javac() if build and digest is not None else None
    if compiler is not None:
        log.info("Building k8s_backend's Spark bridge jar for pyspark %s into %s", pyspark.version, cached)
        try:
            return javac.build_jar(cached, pyspark.jars_dir, javac=compiler)
        except javac.JarBuildError as error:
            raise BridgeJarError(str(error)) from error
    if is_usable(PACKAGED_JAR, pyspark, None):
        # Built from other sources of the same Scala line (e.g. an edited checkout without a JDK).
        log.warning("Using %s, built from different bridge sources; rebuild it with a JDK", PACKAGED_JAR)
        return PACKAGED_JAR
    raise BridgeJarError(
        f"k8s_backend has no Spark bridge jar for pyspark {pyspark.version} (looked at {PACKAGED_JAR} and "
        f"{cached}) and cannot build one: {javac.JDK_HINT}; the jar is then built on first use. "
        "Alternatively install a k8s_backend wheel that carries the built jar."
    )
