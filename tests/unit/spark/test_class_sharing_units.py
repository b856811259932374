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
from k8s_backend.spark.class_sharing import ClassSharing, failed_marker, plan
from k8s_backend.spark.gateway import SHARING_ATTRIBUTE, shut_down
from k8s_backend.spark.status import FACTORY_ATTRIBUTE

QUIET = "-Xlog:cds*=off"


@pytest.fixture
def install(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """A JDK (JAVA_HOME), Spark's jars and the archives' folder, all in tmp_path."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    jars = tmp_path / "spark" / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core.jar").write_bytes(b"core")
    (jars / "spark-sql.jar").write_bytes(b"sql")
    return {"JAVA_HOME": str(tmp_path / "jdk"), "PATH": ""}, jars, tmp_path / "archives"


def recorded(sharing: ClassSharing | None, content: bytes = b"archive") -> ClassSharing:
    """What the JVM does as it exits: writes the archive where it was told to."""
    assert sharing is not None and sharing.recording is not None
    sharing.recording.write_bytes(content)
    return sharing


def test_one_driver_records_while_another_starting_then_runs_without(install) -> None:
    environ, jars, folder = install
    first = plan({}, environ, jars, folder=folder)
    assert first is not None and first.records
    assert first.java_options() == f"-XX:ArchiveClassesAtExit={first.recording} {QUIET}"
    assert plan({}, environ, jars, folder=folder) is None  # the first holds the recorders' lock
    first.finish(exit_code=None)  # its JVM never started
    again = plan({}, environ, jars, folder=folder)
    assert again is not None and again.records


def test_a_recorded_archive_is_put_in_place_and_mapped_by_the_next_driver(install) -> None:
    environ, jars, folder = install
    first = recorded(plan({}, environ, jars, folder=folder))
    assert first.finish(exit_code=0)
    assert first.archive.read_bytes() == b"archive"
    assert sorted(p.name for p in folder.iterdir()) == [first.archive.name, first.archive.name + ".lock"]
    second = plan({}, environ, jars, folder=folder)
    assert second == ClassSharing(first.archive)
    assert second.java_options() == f"-XX:SharedArchiveFile={first.archive} {QUIET}"


@pytest.mark.parametrize("exit_code", [0, 1])  # 1: HotSpot's "Error occurred during CDS dumping"
def test_a_jvm_that_could_not_write_one_is_not_asked_again(install, exit_code: int) -> None:
    environ, jars, folder = install
    first = plan({}, environ, jars, folder=folder)
    assert first is not None
    if exit_code:
        recorded(first, b"half")
    assert not first.finish(exit_code=exit_code)
    assert failed_marker(first.archive).exists()
    assert not first.archive.exists() and not list(folder.glob("*.tmp"))
    assert plan({}, environ, jars, folder=folder) is None


@pytest.mark.parametrize("exit_code, ran_a_driver", [(-9, True), (0, False)])
def test_a_killed_jvm_or_one_that_ran_no_driver_leaves_nothing_and_a_later_driver_records(
    install, exit_code: int, ran_a_driver: bool
) -> None:
    environ, jars, folder = install
    first = recorded(plan({}, environ, jars, folder=folder), b"half an archive")
    assert not first.finish(exit_code=exit_code, ran_a_driver=ran_a_driver)
    assert [p.suffix for p in folder.iterdir()] == [".lock"]
    again = plan({}, environ, jars, folder=folder)
    assert again is not None and again.records


def test_a_jvm_still_writing_keeps_the_lock_and_the_next_recorder_removes_its_file(install) -> None:
    environ, jars, folder = install
    first = recorded(plan({}, environ, jars, folder=folder), b"half")
    assert first.lock_fd is not None
    jvm_copy = os.dup(first.lock_fd)  # the JVM inherited the lock
    first.finish(exit_code=None)  # its Python gave up waiting
    assert plan({}, environ, jars, folder=folder) is None
    assert first.recording is not None and first.recording.exists()
    os.close(jvm_copy)  # the JVM ended without renaming anything
    taken = plan({}, environ, jars, folder=folder)
    assert taken is not None and taken.records
    assert not first.recording.exists() or first.recording == taken.recording
    assert not [p for p in folder.glob("*.tmp") if p != taken.recording]


def test_the_archives_used_last_are_kept(install) -> None:
    environ, jars, folder = install
    names = []
    for i in range(class_sharing.KEEP + 2):
        (jars / "spark-core.jar").write_bytes(b"core" * (i + 1))  # another Spark: another archive
        sharing = recorded(plan({}, environ, jars, folder=folder))
        assert sharing.finish(exit_code=0)
        os.utime(
            sharing.archive, (1000 + i, 1000 + i)
        )  # used in this order, each before the next's recording
        names.append(sharing.archive.name)
    assert sorted(p.name for p in folder.glob("*.jsa")) == sorted(names[-class_sharing.KEEP :])


def test_a_changed_jar_or_classpath_gets_another_archive(install) -> None:
    environ, jars, _ = install
    java = Path(environ["JAVA_HOME"]) / "bin" / "java"
    key = class_sharing.archive_key(java, [jars])
    assert class_sharing.archive_key(java, [jars]) == key
    (jars / "spark-sql.jar").write_bytes(b"sql, patched")
    changed = class_sharing.archive_key(java, [jars])
    assert changed != key
    assert class_sharing.archive_key(java, [jars, jars / "extra.jar"]) != changed


def test_the_options_go_to_spark_submit_beside_the_users_and_the_jvm_inherits_the_lock(
    install, monkeypatch: pytest.MonkeyPatch
) -> None:
    environ, jars, folder = install
    sharing = plan({}, environ, jars, folder=folder)
    assert sharing is not None and sharing.lock_fd is not None
    assert sharing.popen_kwargs({"pass_fds": (7,), "cwd": "/"}) == {
        "pass_fds": (7, sharing.lock_fd),
        "cwd": "/",
    }
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Dmine=1")
    with sharing.submit_options():
        assert os.environ["SPARK_SUBMIT_OPTS"] == f"-Dmine=1 {sharing.java_options()}"
    assert os.environ["SPARK_SUBMIT_OPTS"] == "-Dmine=1"
    monkeypatch.delenv("SPARK_SUBMIT_OPTS")
    with sharing.submit_options():
        assert os.environ["SPARK_SUBMIT_OPTS"] == sharing.java_options()
    assert "SPARK_SUBMIT_OPTS" not in os.environ
    sharing.finish(exit_code=None)


@pytest.mark.parametrize(
    "properties, environ",
    [
        ({"spark.kubernetes.driver.classDataSharing": "false"}, {}),
        ({}, {"PYSPARK_SUBMIT_ARGS": "--conf spark.kubernetes.driver.classDataSharing=false pyspark-shell"}),
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


@pytest.mark.parametrize(
    "properties, environ",
    [
        ({"spark.driver.extraJavaOptions": "-javaagent:/otel.jar"}, {}),  # HotSpot refuses to dump
        ({}, {"JAVA_TOOL_OPTIONS": "-agentpath:/prof.so"}),
        ({"spark.kubernetes.submitInDriver": "true"}, {}),  # a driver pod's cache ends with it
        ({}, {"SPARK_CONF_DIR": "<conf>"}),  # a non-empty folder on the classpath: HotSpot refuses to dump
        ({"spark.driver.extraClassPath": "<conf>"}, {}),
        ({}, {"HADOOP_CONF_DIR": "<conf>"}),
    ],
)
def test_nothing_is_recorded_where_it_cannot_be_but_an_archive_is_mapped(
    install, tmp_path: Path, properties: dict[str, str], environ: dict[str, str]
) -> None:
    base, jars, folder = install
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "log4j2.properties").write_text("")

    def filled(values: dict[str, str]) -> dict[str, str]:
        return {k: v.replace("<conf>", str(conf)) for k, v in values.items()}

    properties, environ = filled(properties), {**base, **filled(environ)}
    assert plan(properties, environ, jars, folder=folder) is None
    extra = properties.get("spark.driver.extraClassPath")
    classpath = [jars, *([Path(extra)] if extra else [])]
    key = class_sharing.archive_key(Path(base["JAVA_HOME"]) / "bin" / "java", classpath)
    folder.mkdir(exist_ok=True)
    (folder / f"{key}.jsa").write_bytes(b"archive")
    assert plan(properties, environ, jars, folder=folder) == ClassSharing(folder / f"{key}.jsa")


def test_an_empty_conf_folder_does_not_stop_the_recording(install) -> None:
    environ, jars, folder = install
    (jars.parent / "conf").mkdir()  # pip's pyspark ships an empty one
    sharing = plan({}, environ, jars, folder=folder)
    assert sharing is not None and sharing.records
    sharing.finish(exit_code=None)


def test_a_bad_value_names_the_key() -> None:
    with pytest.raises(ConfigError, match="spark.kubernetes.driver.classDataSharing=sometimes"):
        plan({"spark.kubernetes.driver.classDataSharing": "sometimes"}, {}, Path("/nowhere"))


def test_a_jvm_ending_with_its_process_only_maps_an_archive(install) -> None:
    environ, jars, folder = install
    assert plan({}, environ, jars, folder=folder, may_record=False) is None
    first = recorded(plan({}, environ, jars, folder=folder))
    first.finish(exit_code=0)
    assert plan({}, environ, jars, folder=folder, may_record=False) == ClassSharing(first.archive)


def test_no_java_or_an_unusable_cache_is_no_plan_and_no_error(install, tmp_path: Path) -> None:
    environ, jars, folder = install
    assert plan({}, {"PATH": ""}, jars, folder=folder) is None
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    assert plan({}, environ, jars, folder=not_a_folder / "archives") is None


def test_a_path_with_a_space_is_not_given_to_spark_submit(install, tmp_path: Path) -> None:
    environ, jars, _ = install
    assert plan({}, environ, jars, folder=tmp_path / "with space") is None


# A stand-in for a recording driver JVM: at the end of its stdin it writes its archive, which takes a
# while, then exits 0 (as PythonGatewayServer does).
RECORDER = "import sys, time; sys.stdin.read(); time.sleep(0.5); open(sys.argv[1], 'wb').write(b'archive')"


@pytest.mark.parametrize("made_a_backend", [True, False])
def test_shut_down_waits_for_the_recording_jvm_and_keeps_the_archive_of_one_that_ran_a_driver(
    install, made_a_backend: bool
) -> None:
    environ, jars, folder = install
    sharing = plan({}, environ, jars, folder=folder)
    assert sharing is not None and sharing.recording is not None
    jvm = subprocess.Popen(
        [sys.executable, "-c", RECORDER, str(sharing.recording)],
        stdin=subprocess.PIPE, **sharing.popen_kwargs({}),
    )  # fmt: skip
    factory = SimpleNamespace(made_a_backend=made_a_backend)
    gateway = SimpleNamespace(proc=jvm, **{SHARING_ATTRIBUTE: sharing, FACTORY_ATTRIBUTE: factory})
    try:
        assert shut_down(gateway, wait=0.1)  # longer than that for a JVM that records
    finally:
        jvm.kill()
    assert sharing.archive.exists() is made_a_backend
    assert not list(folder.glob("*.tmp"))
    again = plan({}, environ, jars, folder=folder)  # the lock is free
    assert again is not None and again.records is not made_a_backend
    again.finish(exit_code=None)
