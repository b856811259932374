"""Class data sharing for the driver JVM k8s_backend starts: Spark's classes mapped from an archive.

A driver JVM loads, verifies and links some 14,000 classes from Spark's jars as it starts. With the
JDK's class data sharing (CDS) it maps them, already parsed, from an archive file instead. Measured here
on a ``pyk8s://`` driver bringing 1,000 executors up: 3.7-4.6 CPU-s instead of 5.2-6.1 for the whole
driver (JVM and Python), and 30 MiB less resident memory; a plain local session starts in 2.9 s instead
of 4.4. On a small machine that CPU is taken from the API server while the first pods are created.

The first driver JVM for a given Java and classpath records the archive as it exits
(``-XX:ArchiveClassesAtExit``), which makes that one exit several seconds longer; later ones map it
(``-XX:SharedArchiveFile``). One JVM records at a time (a lock file naming the recording process); a
JVM that cannot write one (a JDK without a base archive, a non-empty directory on the classpath) leaves
a marker, so the recording is not paid again for that classpath. The JVM checks an archive against its
own classpath and jars and quietly ignores one that does not match, so a stale archive costs the
saving, never correctness; its CDS log is turned off for that reason (``-Xlog:cds*=off``).

Nothing is recorded in a cluster-mode driver's pod, whose cache ends with it. A CDS option the user
gives the JVM (``-Xshare:...``, ``-XX:SharedArchiveFile``, ...) in the driver's Java options or the
environment turns this off, and so does ``spark.kubernetes.driver.classDataSharing=false``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

import attrs

from k8s_backend.conf.keys import key as conf_key
from k8s_backend.spark.jar import cache_dir

log = logging.getLogger(__name__)

KEY = "spark.kubernetes.driver.classDataSharing"
OPTIONS_KEY = "spark.driver.extraJavaOptions"
QUIET = "-Xlog:cds*=off"  # a missing or mismatched archive is not worth a warning on the driver's stderr
FOLDER = "class-archives"
LOCK_WRITE_GRACE = 10.0  # seconds a lock may stay empty while its process writes its pid
# Options by which a user chooses class data sharing for the JVM; ours would then conflict.
USER_CDS_OPTIONS = (
    "-Xshare",
    "SharedArchiveFile",
    "ArchiveClassesAtExit",
    "DumpLoadedClassList",
    "SharedClassListFile",
    "AutoCreateSharedArchive",
)
# Where else spark-submit's JVM takes options from.
JAVA_OPTION_SOURCES = ("spark.driver.defaultJavaOptions", OPTIONS_KEY)
JAVA_OPTION_ENV = (
    "SPARK_SUBMIT_OPTS",
    "JAVA_TOOL_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "_JAVA_OPTIONS",
    "PYSPARK_SUBMIT_ARGS",
)


@attrs.frozen
class ClassSharing:
    """What one driver JVM does with the archive: map ``archive``, or record it at exit (``recording``)."""

    archive: Path
    recording: Path | None = None  # this JVM writes the archive here as it exits; None: it maps it

    @property
    def records(self) -> bool:
        return self.recording is not None

    def java_options(self) -> str:
        """The options for the JVM's command line."""
        if self.recording is not None:
            return f"-XX:ArchiveClassesAtExit={self.recording} {QUIET}"
        return f"-XX:SharedArchiveFile={self.archive} {QUIET}"

    def apply(self, properties: Mapping[str, str]) -> dict[str, str]:
        """``properties`` with :meth:`java_options` after the driver's own Java options."""
        given = properties.get(OPTIONS_KEY, "").strip()
        return {**properties, OPTIONS_KEY: f"{given} {self.java_options()}".strip()}

    def finish(self, exited_cleanly: bool, ran_a_driver: bool = True) -> bool:
        """After the JVM ended: put a recorded archive in place and release the lock. Returns whether an
        archive was put in place. A JVM that exited cleanly without writing one cannot (marked, so that
        it is not asked again). The archive of a JVM that never ran a driver (its SparkContext failed,
        or none was made) holds too few of Spark's classes to keep: a later driver records one."""
        if self.recording is None:
            return False
        try:
            written = self.recording.is_file() and self.recording.stat().st_size > 0
            if not ran_a_driver:
                self.recording.unlink(missing_ok=True)
                return False
            if exited_cleanly and written:
                os.replace(self.recording, self.archive)
                log.info(
                    "Recorded the driver JVM's class archive %s: later drivers start faster", self.archive
                )
                return True
            self.recording.unlink(missing_ok=True)
            if exited_cleanly:
                failed_marker(self.archive).touch()
                log.info(
                    "The driver JVM wrote no class archive; k8s_backend will not ask it again for this "
                    "Java and classpath (delete %s to retry)",
                    failed_marker(self.archive),
                )
            return False
        finally:
            lock_file(self.archive).unlink(missing_ok=True)


def plan(
    properties: Mapping[str, str],
    environ: Mapping[str, str],
    jars_dir: Path,
    *,
    may_record: bool = True,
    folder: Path | None = None,
) -> ClassSharing | None:
    """How the driver JVM to be launched with ``properties`` (and ``environ``, Spark's jars in
    ``jars_dir``) uses an archive in ``folder``, or None when it does not: it maps the archive if there is
    one, else records it if ``may_record`` and no other process records it now.

    Raises :class:`k8s_backend.ConfigError` naming :data:`KEY` for a value that is not a boolean.
    """
    raw = properties.get(KEY)
    if raw is not None and not conf_key(KEY).convert(raw):
        return None
    if user_chose_sharing(properties, environ):
        return None
    java = java_binary(environ)
    if java is None:
        return None  # spark-submit will say that it found no java
    classpath = [
        jars_dir,
        *(Path(p) for p in properties.get("spark.driver.extraClassPath", "").split(os.pathsep) if p),
    ]
    folder = folder or cache_dir() / FOLDER
    archive = folder / f"{archive_key(java, classpath)}.jsa"
    if any(c.isspace() or c in "\"'" for c in str(archive)):
        return None  # spark-submit splits Java options at spaces
    if archive.is_file():
        with contextlib.suppress(OSError):
            os.utime(archive)  # last used: what a clean-up of the cache goes by
        return ClassSharing(archive)
    if (
        not may_record
        or properties.get("spark.kubernetes.submitInDriver") == "true"
        or failed_marker(archive).exists()
    ):
        return None  # a driver pod's cache ends with it; or this JVM cannot write one
    folder.mkdir(parents=True, exist_ok=True)
    if not take_lock(archive):
        return None  # another driver records it now
    return ClassSharing(archive, recording=archive.with_name(f"{archive.name}.{os.getpid()}.tmp"))


def user_chose_sharing(properties: Mapping[str, str], environ: Mapping[str, str]) -> bool:
    """Whether the user gives the JVM a class data sharing option of their own."""
    given = [properties.get(k, "") for k in JAVA_OPTION_SOURCES] + [
        environ.get(k, "") for k in JAVA_OPTION_ENV
    ]
    return any(option in text for text in given for option in USER_CDS_OPTIONS)


def java_binary(environ: Mapping[str, str]) -> Path | None:
    """The ``java`` spark-submit runs: ``$JAVA_HOME/bin/java``, else the first on ``PATH``."""
    home = environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java", path=environ.get("PATH"))
    if not found or not os.path.isfile(found):
        return None
    return Path(os.path.realpath(found))


def archive_key(java: Path, classpath: list[Path]) -> str:
    """A name for the archive of this JVM and classpath: their files' paths, sizes and modification times,
    so that a changed jar or JDK gets a new archive rather than a silently ignored one."""
    digest = hashlib.sha256()
    files = [java]
    for entry in classpath:
        files.extend(sorted(entry.glob("*.jar")) if entry.is_dir() else [entry])
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            digest.update(f"{path}\0missing\n".encode())
            continue
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def lock_file(archive: Path) -> Path:
    return archive.with_name(archive.name + ".lock")


def failed_marker(archive: Path) -> Path:
    return archive.with_name(archive.name + ".failed")


def take_lock(archive: Path) -> bool:
    """Become the one process recording ``archive``; a lock whose process is gone is taken over, and
    what that process left half written is removed."""
    lock = lock_file(archive)
    for _ in range(2):
        try:
            descriptor = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if process_alive(read_pid(lock)) or just_made(lock):
                return False
            lock.unlink(missing_ok=True)
            for stale in archive.parent.glob(f"{archive.name}.*.tmp"):
                stale.unlink(missing_ok=True)
            continue
        with os.fdopen(descriptor, "w") as handle:
            handle.write(str(os.getpid()))
        return True
    return False


def just_made(lock: Path) -> bool:
    """A lock without a pid yet: its process is between creating it and writing its pid."""
    try:
        return read_pid(lock) is None and time.time() - lock.stat().st_mtime < LOCK_WRITE_GRACE
    except OSError:
        return False


def read_pid(lock: Path) -> int | None:
    try:
        return int(lock.read_text().strip())
    except (OSError, ValueError):
        return None


def process_alive(pid: int | None) -> bool:
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True
