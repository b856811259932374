"""The driver JVM's class data sharing: which archive, who records it, and what becomes of a recording."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from k8s_backend.errors import ConfigError
from k8s_backend.spark import class_sharing
from k8s_backend.spark.class_sharing import ClassSharing, failed_marker, lock_file, plan
from k8s_backend.spark.gateway import SHARING_ATTRIBUTE, shut_down
from k8s_backend.spark.status import FACTORY_ATTRIBUTE


@pytest.fixture
def install(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """A JDK (JAVA_HOME), Spark's jars and the archives' folder, all in tmp_path."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "spark-core.jar").write_bytes(b"core")
    (jars / "spark-sql.jar").write_bytes(b"sql")
    return {"JAVA_HOME": str(tmp_path / "jdk"), "PATH": ""}, jars, tmp_path / "archives"


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_first_driver_records_and_a_second_one_at_the_same_time_runs_without(install) -> None:
    environ, jars, folder = install
    first = plan({}, environ, jars, folder=folder)
    assert first is not None and first.records
    assert first.java_options() == f"-XX:ArchiveClassesAtExit={first.recording} -Xlog:cds*=off"
    assert lock_file(first.archive).read_text() == str(os.getpid())
    assert plan({}, environ, jars, folder=folder) is None  # the lock's process is alive


def test_a_recorded_archive_is_put_in_place_and_mapped_by_the_next_driver(install) -> None:
    environ, jars, folder = install
    first = plan({}, environ, jars, folder=folder)
    assert first is not None and first.recording is not None
    first.recording.write_bytes(b"archive")  # what the JVM writes as it exits
    assert first.finish(exited_cleanly=True)
    assert first.archive.read_bytes() == b"archive"
    assert not lock_file(first.archive).exists()
    assert list(folder.iterdir()) == [first.archive]
    second = plan({}, environ, jars, folder=folder)
    assert second == ClassSharing(first.archive)
    assert second.java_options() == f"-XX:SharedArchiveFile={first.archive} -Xlog:cds*=off"


def test_a_jvm_that_wrote_nothing_is_not_asked_again(install) -> None:
    environ, jars, folder = install
    first = plan({}, environ, jars, folder=folder)
    assert first is not None
    assert not first.finish(exited_cleanly=True)
    assert failed_marker(first.archive).exists()
    assert not lock_file(first.archive).exists()
    assert plan({}, environ, jars, folder=folder) is None


@pytest.mark.parametrize("exited_cleanly, ran_a_driver", [(False, True), (True, False)])
def test_a_killed_jvm_or_one_that_ran_no_driver_leaves_nothing_and_a_later_driver_records(
    install, exited_cleanly: bool, ran_a_driver: bool
) -> None:
    environ, jars, folder = install
    first = plan({}, environ, jars, folder=folder)
    assert first is not None and first.recording is not None
    first.recording.write_bytes(b"half an archive")
    assert not first.finish(exited_cleanly=exited_cleanly, ran_a_driver=ran_a_driver)
    assert list(folder.iterdir()) == []
    again = plan({}, environ, jars, folder=folder)
    assert again is not None and again.records


def test_the_lock_of_a_dead_process_is_taken_over_and_its_half_archive_removed(install) -> None:
    environ, jars, folder = install
    first = plan({}, environ, jars, folder=folder)
    assert first is not None
    gone = dead_pid()
    lock_file(first.archive).write_text(str(gone))
    stale = first.archive.with_name(f"{first.archive.name}.{gone}.tmp")
    stale.write_bytes(b"half")
    taken = plan({}, environ, jars, folder=folder)
    assert taken is not None and taken.records
    assert not stale.exists()
    assert lock_file(first.archive).read_text() == str(os.getpid())


def test_a_lock_still_without_its_pid_is_respected(install) -> None:
    environ, jars, folder = install
    first = plan({}, environ, jars, folder=folder)
    assert first is not None
    lock_file(first.archive).write_text("")  # its process has not written its pid yet
    assert plan({}, environ, jars, folder=folder) is None


def test_a_changed_jar_or_classpath_gets_another_archive(install) -> None:
    environ, jars, _ = install
    java = Path(environ["JAVA_HOME"]) / "bin" / "java"
    key = class_sharing.archive_key(java, [jars])
    assert class_sharing.archive_key(java, [jars]) == key
    (jars / "spark-sql.jar").write_bytes(b"sql, patched")
    changed = class_sharing.archive_key(java, [jars])
    assert changed != key
    assert class_sharing.archive_key(java, [jars, jars / "extra.jar"]) != changed


def test_the_options_follow_the_drivers_own() -> None:
    sharing = ClassSharing(Path("/cache/a.jsa"))
    applied = sharing.apply({"spark.driver.extraJavaOptions": "-Dx=1", "spark.app.name": "app"})
    assert applied == {
        "spark.driver.extraJavaOptions": "-Dx=1 -XX:SharedArchiveFile=/cache/a.jsa -Xlog:cds*=off",
        "spark.app.name": "app",
    }


@pytest.mark.parametrize(
    "properties, environ",
    [
        ({"spark.kubernetes.driver.classDataSharing": "false"}, {}),
        ({"spark.driver.extraJavaOptions": "-Xshare:off"}, {}),
        ({"spark.driver.defaultJavaOptions": "-XX:SharedArchiveFile=/mine.jsa"}, {}),
        ({}, {"JAVA_TOOL_OPTIONS": "-XX:SharedArchiveFile=/mine.jsa"}),
        ({}, {"SPARK_SUBMIT_OPTS": "-Xshare:auto"}),
        ({}, {"PYSPARK_SUBMIT_ARGS": "--driver-java-options -XX:ArchiveClassesAtExit=/x.jsa pyspark-shell"}),
    ],
)
def test_off_when_turned_off_or_when_the_user_chose_sharing(install, properties, environ) -> None:
    base, jars, folder = install
    assert plan(properties, {**base, **environ}, jars, folder=folder) is None
    assert not folder.exists()


def test_a_bad_value_names_the_key() -> None:
    with pytest.raises(ConfigError, match="spark.kubernetes.driver.classDataSharing=sometimes"):
        plan({"spark.kubernetes.driver.classDataSharing": "sometimes"}, {}, Path("/nowhere"))


def test_a_driver_pod_and_a_jvm_ending_with_its_process_only_map_an_archive(install) -> None:
    environ, jars, folder = install
    in_pod = {"spark.kubernetes.submitInDriver": "true"}
    assert plan(in_pod, environ, jars, folder=folder) is None
    assert plan({}, environ, jars, folder=folder, may_record=False) is None
    first = plan({}, environ, jars, folder=folder)
    assert first is not None and first.recording is not None
    first.recording.write_bytes(b"archive")
    first.finish(exited_cleanly=True)
    assert plan(in_pod, environ, jars, folder=folder) == ClassSharing(first.archive)
    assert plan({}, environ, jars, folder=folder, may_record=False) == ClassSharing(first.archive)


def test_no_java_no_plan(install) -> None:
    _, jars, folder = install
    assert plan({}, {"PATH": ""}, jars, folder=folder) is None


def test_a_path_with_a_space_is_not_given_to_spark_submit(install, tmp_path: Path) -> None:
    environ, jars, _ = install
    assert plan({}, environ, jars, folder=tmp_path / "with space") is None


# A stand-in for a recording driver JVM: at the end of its stdin it writes its archive, which takes a
# while, then exits 0 (as PythonGatewayServer does).
RECORDER = (
    "import sys, time; sys.stdin.read(); time.sleep(0.5); open(sys.argv[1], 'wb').write(b'archive')"
)


@pytest.mark.parametrize("made_a_backend", [True, False])
def test_shut_down_waits_for_the_recording_jvm_and_keeps_the_archive_of_one_that_ran_a_driver(
    install, made_a_backend: bool
) -> None:
    environ, jars, folder = install
    sharing = plan({}, environ, jars, folder=folder)
    assert sharing is not None and sharing.recording is not None
    jvm = subprocess.Popen([sys.executable, "-c", RECORDER, str(sharing.recording)], stdin=subprocess.PIPE)
    factory = SimpleNamespace(made_a_backend=made_a_backend)
    gateway = SimpleNamespace(proc=jvm, **{SHARING_ATTRIBUTE: sharing, FACTORY_ATTRIBUTE: factory})
    try:
        assert shut_down(gateway, wait=0.1)  # longer than that for a JVM that records
    finally:
        jvm.kill()
    assert sharing.archive.exists() is made_a_backend
    assert not lock_file(sharing.archive).exists()
    assert [p.name for p in folder.iterdir()] == ([sharing.archive.name] if made_a_backend else [])
