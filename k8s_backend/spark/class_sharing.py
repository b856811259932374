"""Class data sharing for the driver JVM k8s_backend starts: Spark's classes mapped from an archive.

A driver JVM loads, verifies and links some 14,000 classes from Spark's jars as it starts. With the
JDK's class data sharing (CDS) it maps them, already parsed, from an archive file instead. Measured here
on a ``pyk8s://`` driver bringing 1,000 executors up: 3.7-4.6 CPU-s instead of 5.2-6.1 for the whole
driver (JVM and Python), and 30 MiB less resident memory; a plain local session starts in 2.9 s instead
of 4.4. On a small machine that CPU is taken from the API server while the first pods are created.

The first driver JVM for a given Java and classpath records the archive as it exits
(``-XX:ArchiveClassesAtExit``), which makes that one exit several seconds longer; later ones map it
(``-XX:SharedArchiveFile``). The options go to spark-submit in ``SPARK_SUBMIT_OPTS``, which adds them to
the driver's command line and replaces none of the user's Java options (``--conf
spark.driver.extraJavaOptions`` would replace the one from ``spark-defaults.conf``).

One JVM records at a time: the recorder holds an exclusive ``flock`` on a lock file, and passes the
descriptor to the JVM, so that the lock lasts until both have ended, whichever ends first. A JVM that
cannot write an archive leaves a marker, so the recording is not paid again for that classpath; none is
recorded where the JVM would refuse to (a Java agent, a non-empty folder on the classpath). The JVM
checks an archive against its own classpath and jars and quietly ignores one that does not match, so a
stale archive costs the saving, never correctness; its CDS log is off for that reason (``-Xlog:cds*=off``).
The folder keeps the :data:`KEEP` archives used last.

Nothing is recorded in a cluster-mode driver's pod, whose cache ends with it. A CDS option the user gives
the JVM (``-Xshare:...``, ``-XX:SharedArchiveFile``, ...) turns this off, and so does
``spark.kubernetes.driver.classDataSharing=false``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from k8s_backend.common.environment import variable_set
from k8s_backend.conf.keys import key as conf_key
from k8s_backend.spark.jar import cache_dir

try:
    import fcntl
except ImportError:  # Windows: archives are mapped, never recorded
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

KEY = "spark.kubernetes.driver.classDataSharing"
OPTIONS_ENV = "SPARK_SUBMIT_OPTS"  # spark-submit adds it to the driver JVM's command line in client mode
QUIET = "-Xlog:cds*=off"  # a missing or mismatched archive is not worth a warning on the driver's stderr
FOLDER = "class-archives"
KEEP = 3  # archives kept in the folder, the most recently used
# Options by which a user chooses class data sharing for the JVM; ours would then conflict.
USER_CDS_OPTIONS = ("-Xshare", "SharedArchiveFile", "ArchiveClassesAtExit", "DumpLoadedClassList",
                    "SharedClassListFile", "AutoCreateSharedArchive")  # fmt: skip
# A JVM with a Java agent refuses to start with -XX:ArchiveClassesAtExit (AllowArchivingWithJavaAgent).
AGENT_OPTIONS = ("-javaagent", "-agentpath", "-agentlib", "-Xrun")
# Where spark-submit's JVM takes Java options from, besides the driver's properties.
JAVA_OPTION_KEYS = ("spark.driver.defaultJavaOptions", "spark.driver.extraJavaOptions")
JAVA_OPTION_ENV = (
    OPTIONS_ENV,
    "JAVA_TOOL_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "_JAVA_OPTIONS",
    "PYSPARK_SUBMIT_ARGS",
)
# Folders spark-submit's launcher puts on the classpath: a non-empty one makes the JVM refuse to dump.
CLASSPATH_FOLDER_ENV = ("HADOOP_CONF_DIR", "YARN_CONF_DIR")
_SUBMIT_ARGS_KEY = re.compile(r"--conf[= ]\s*['\"]?" + re.escape(KEY) + r"=(?P<value>[^\s'\"]+)")


@attrs.frozen
class ClassSharing:
    """What one driver JVM does with the archive: map ``archive``, or record it at exit (``recording``,
    holding the recorders' lock through ``lock_fd``)."""

    archive: Path
    recording: Path | None = None  # this JVM writes the archive here as it exits; None: it maps it
    lock_fd: int | None = None

    @property
    def records(self) -> bool:
        return self.recording is not None

    def java_options(self) -> str:
        """The options for the JVM's command line."""
        if self.recording is not None:
            return f"-XX:ArchiveClassesAtExit={self.recording} {QUIET}"
        return f"-XX:SharedArchiveFile={self.archive} {QUIET}"

    def popen_kwargs(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """``kwargs`` for the JVM's ``Popen``, which inherits the lock while it records."""
        if self.lock_fd is None:
            return dict(kwargs)
        passed: tuple[int, ...] = tuple(kwargs.get("pass_fds", ()))
        return {**kwargs, "pass_fds": (*passed, self.lock_fd)}

    @contextlib.contextmanager
    def submit_options(self) -> Iterator[None]:
        """:meth:`java_options` in ``SPARK_SUBMIT_OPTS`` while pyspark starts spark-submit.

        pyspark gives spark-submit a copy of ``os.environ`` (its ``popen_kwargs`` cannot carry an
        environment), so the variable is set for the launch and put back after it.
        """
        options = self.java_options()
        with variable_set(OPTIONS_ENV, lambda before: f"{before or ''} {options}".strip()):
            yield

    def finish(self, exit_code: int | None, ran_a_driver: bool = True) -> bool:
        """After the JVM ended with ``exit_code`` (None: it has not ended yet): put a recorded archive in
        place, and let go of the lock. Returns whether an archive was put in place.

        A JVM that ended on its own without writing one (exit 0 without a file; exit 1 is HotSpot's
        failed dump) cannot: a marker keeps later drivers from asking again. The archive of a JVM that never
        ran a driver (its SparkContext failed, or none was made) holds too few of Spark's classes to keep.
        A JVM still running keeps its half-written file and the lock: the next recorder removes the file.
        """
        if self.recording is None:
            return False
        try:
            return self._settle(self.recording, exit_code, ran_a_driver)
        except OSError as error:
            log.debug("Could not settle the class archive %s: %s", self.recording, error)
            return False
        finally:
            if self.lock_fd is not None:
                with contextlib.suppress(OSError):
                    os.close(self.lock_fd)  # the lock is free once the JVM's copy is closed too

    def _settle(self, recording: Path, exit_code: int | None, ran_a_driver: bool) -> bool:
        if exit_code is None:
            return False
        written = recording.is_file() and recording.stat().st_size > 0
        if exit_code == 0 and written and ran_a_driver:
            os.replace(recording, self.archive)
            prune(self.archive.parent)
            log.info("Recorded the driver JVM's class archive %s: later drivers start faster", self.archive)
            return True
        recording.unlink(missing_ok=True)
        if exit_code >= 0 and ran_a_driver:  # not a signal: the JVM could not write it
            failed_marker(self.archive).touch()
            log.info("The driver JVM wrote no class archive (exit %d); delete %s to have the next driver try "
                     "again", exit_code, failed_marker(self.archive))  # fmt: skip
        return False


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
    one, else records it if ``may_record`` and no other process records it now. A cache folder that
    cannot be used is no error: the JVM then starts as it would without k8s_backend.

    Raises :class:`k8s_backend.ConfigError` naming :data:`KEY` for a value that is not a boolean.
    """
    raw = properties.get(KEY) or submit_args_value(environ.get("PYSPARK_SUBMIT_ARGS", ""))
    if raw is not None and not conf_key(KEY).convert(raw):
        return None
    if given_options(properties, environ, USER_CDS_OPTIONS):
        return None
    try:
        return _plan(properties, environ, jars_dir, may_record, folder)
    except (OSError, RuntimeError) as error:  # (RuntimeError: Path.home() without a home)
        log.debug("No class archive for the driver JVM: %s", error)
        return None


def _plan(
    properties: Mapping[str, str], environ: Mapping[str, str], jars_dir: Path, may_record: bool,
    folder: Path | None,
) -> ClassSharing | None:  # fmt: skip
    java = java_binary(environ)
    if java is None:
        return None  # spark-submit will say that it found no java
    extra = [Path(p) for p in properties.get("spark.driver.extraClassPath", "").split(os.pathsep) if p]
    folder = (folder or cache_dir() / FOLDER).resolve()
    archive = folder / f"{archive_key(java, [jars_dir, *extra])}.jsa"
    if any(c.isspace() or c in "\"'\\" for c in str(archive)):
        return None  # spark-submit splits Java options at spaces and reads quotes and backslashes
    if archive.is_file():
        os.utime(archive)  # last used: what the pruning goes by
        return ClassSharing(archive)
    if (
        not may_record
        or fcntl is None
        or properties.get("spark.kubernetes.submitInDriver") == "true"  # a pod's cache ends with it
        or failed_marker(archive).exists()
        or given_options(properties, environ, AGENT_OPTIONS)
        or nonempty_classpath_folder([*extra, spark_conf_dir(jars_dir, environ)], environ)
    ):
        return None
    return record(archive)


def record(archive: Path) -> ClassSharing | None:
    """Become the one recorder of ``archive``, or None when another process records it now."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(lock_file(archive), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(descriptor)
        return None
    if archive.is_file():  # another recorder finished between our look and the lock
        os.close(descriptor)
        return ClassSharing(archive)
    for stale in archive.parent.glob(f"{archive.name}.*.tmp"):  # a recorder that was cut short
        stale.unlink(missing_ok=True)
    recording = archive.with_name(f"{archive.name}.{os.getpid()}.tmp")
    return ClassSharing(archive, recording=recording, lock_fd=descriptor)


def submit_args_value(submit_args: str) -> str | None:
    """:data:`KEY`'s value in ``PYSPARK_SUBMIT_ARGS`` (``--conf KEY=...``), if given there."""
    found = _SUBMIT_ARGS_KEY.search(submit_args)
    return found.group("value") if found else None


def given_options(
    properties: Mapping[str, str], environ: Mapping[str, str], options: tuple[str, ...]
) -> bool:
    """Whether one of ``options`` is among the Java options the user gives the driver JVM."""
    given = [properties.get(k, "") for k in JAVA_OPTION_KEYS] + [environ.get(k, "") for k in JAVA_OPTION_ENV]
    return any(option in text for text in given for option in options)


def spark_conf_dir(jars_dir: Path, environ: Mapping[str, str]) -> Path:
    """The configuration folder spark-submit's launcher puts first on the classpath."""
    return Path(environ.get("SPARK_CONF_DIR") or jars_dir.parent / "conf")


def nonempty_classpath_folder(entries: list[Path], environ: Mapping[str, str]) -> bool:
    """Whether a folder on the driver's classpath holds files: HotSpot then refuses to dump an archive."""
    listed = [*entries, *(Path(environ[k]) for k in CLASSPATH_FOLDER_ENV if environ.get(k))]
    listed += [Path(p) for p in environ.get("SPARK_DIST_CLASSPATH", "").split(os.pathsep) if p]
    for entry in listed:
        with contextlib.suppress(OSError):
            if entry.is_dir() and any(entry.iterdir()):
                return True
    return False


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


def prune(folder: Path, keep: int = KEEP) -> None:
    """Delete all but the ``keep`` archives used last (a JVM that maps one keeps its mapping)."""
    used: list[tuple[float, Path]] = []
    for archive in folder.glob("*.jsa"):
        with contextlib.suppress(OSError):  # (another process's prune took it)
            used.append((archive.stat().st_mtime, archive))
    for _, old in sorted(used, reverse=True)[keep:]:
        for path in (old, lock_file(old), failed_marker(old)):
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)


def lock_file(archive: Path) -> Path:
    return archive.with_name(archive.name + ".lock")


def failed_marker(archive: Path) -> Path:
    return archive.with_name(archive.name + ".failed")
