"""One line on stderr, a non-zero exit code and no traceback (unless -v) for what a user of a client-mode
``k8s-backend submit`` can get wrong, each in a real process as a user runs it: a ``--packages`` that
cannot be resolved, an executor image that cannot be pulled, a Hard gang that times out, and Ctrl-C while
a job runs (which still deletes the executor pods and ConfigMaps); with -v, the detail the line stands for.

The cluster is a LocalCluster in the test's process that knows only the local Spark image, so that what
the command leaves behind can be seen. Nothing goes to the network: ``--packages`` resolves through an
Ivy settings file whose only resolver is an empty local directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import APPS

from k8s_backend.kube.port import CONFIG_MAPS, PODS
from k8s_backend.local.images import default_spark_image
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

UNPULLABLE = "nosuch/image:1"
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
CONF = {
    "spark.executor.memory": "512m",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.extraJavaOptions": FAST_JVM,
    "spark.executor.extraJavaOptions": FAST_JVM,
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}
IVY_SETTINGS = """<ivysettings>
  <settings defaultResolver="nowhere"/>
  <resolvers>
    <filesystem name="nowhere">
      <ivy pattern="{repo}/[organisation]/[module]/[revision]/ivy.xml"/>
      <artifact pattern="{repo}/[organisation]/[module]/[revision]/[artifact].[ext]"/>
    </filesystem>
  </resolvers>
</ivysettings>
"""
TRACEBACK_MARKS = ("Traceback", "Py4JJavaError", "JAVA_GATEWAY_EXITED", "\tat ", "KeyboardInterrupt")


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(known_images=[default_spark_image()]) as local:
        yield local


def command(master: str, *options: str, conf: dict[str, str] | None = None) -> list[str]:
    settings = {**CONF, **(conf or {})}
    confs = [item for key, value in settings.items() for item in ("--conf", f"{key}={value}")]
    return [sys.executable, "-m", "k8s_backend.cli.main", "submit", "--master", master, *confs, *options]


def on(cluster: LocalCluster, image: str, **conf: str) -> dict[str, str]:
    return {
        "spark.kubernetes.authenticate.oauthToken": cluster.token,
        "spark.kubernetes.container.image": image,
        **conf,
    }


def default_sigint() -> None:
    """A shell's foreground command takes Ctrl-C even when the test runner was started in the background
    (which leaves SIGINT ignored in its children)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=600, check=False, cwd=cwd, preexec_fn=default_sigint
    )


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("k8s-backend: error: ")]


def assert_no_traceback(stderr: str) -> None:
    for mark in TRACEBACK_MARKS:
        assert mark not in stderr, stderr[-4000:]


def left_on(cluster: LocalCluster) -> dict[str, list[str]]:
    found = {
        "pods": [p["metadata"]["name"] for p in cluster.fake.objects(PODS, "default")],
        "config_maps": [m["metadata"]["name"] for m in cluster.fake.objects(CONFIG_MAPS, "default")],
    }
    return {kind: names for kind, names in found.items() if names}


def unresolvable(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    repo = tmp_path / "empty-repo"
    repo.mkdir()
    settings = tmp_path / "ivysettings.xml"
    settings.write_text(IVY_SETTINGS.format(repo=repo))
    conf = {"spark.jars.ivySettings": str(settings), "spark.jars.ivy": str(tmp_path / "ivy-home")}
    argv = command("pyk8s://local", *options, "--packages", "org.example.nothere:nothing:0.0.1", conf=conf)
    return run([*argv, str(APPS / "pi.py")], tmp_path)


def test_an_unresolvable_package_is_one_line(tmp_path: Path) -> None:
    done = unresolvable(tmp_path)
    assert done.returncode == 2, done.stderr[-4000:]
    assert done.stderr.splitlines() == error_lines(done.stderr), done.stderr[-4000:]  # nothing else
    [line] = error_lines(done.stderr)
    assert "did not start: unresolved dependency: org.example.nothere#nothing;0.0.1: not found" in line
    assert "--packages" in line


def test_v_shows_the_jvm_output_and_the_traceback(tmp_path: Path) -> None:
    done = unresolvable(tmp_path, "-v")
    assert done.returncode == 2
    assert "UNRESOLVED DEPENDENCIES" in done.stderr and "Traceback" in done.stderr
    last = done.stderr.rstrip().splitlines()[-1]
    assert last.startswith("k8s-backend: error: the driver JVM did not start")


# k8s_backend's failures of the application: (extra Spark properties, options, start of the one line).
FAILURES = {
    "unpullable-image": (
        {"spark.kubernetes.executor.imagePullFailTimeout": "3s"},
        (),
        f"k8s-backend: error: the application failed: Executor image {UNPULLABLE} cannot be pulled "
        "(ErrImagePull: ",
    ),
    "hard-gang-timeout": (
        {
            "spark.kubernetes.gang.enabled": "true",
            "spark.kubernetes.gang.style": "Hard",
            "spark.kubernetes.gang.timeout": "3s",
            "spark.kubernetes.executor.imagePullFailTimeout": "0",
        },
        ("--num-executors", "2"),
        "k8s-backend: error: the application failed: Gang scheduling (Hard) timed out: only 0 of 2 executors",
    ),
}
# What the failure's one line is told instead of, shown with -v: the backend's log record, the bridge's
# record and Spark's error with its exception, the Java stack frames, and the script's traceback.
DETAIL = (
    "ERROR k8s_backend.backend.hooks: Application spark-",
    "ERROR PyK8sSchedulerBackend: k8s_backend stops the application: ",
    "ERROR SparkContext: Error initializing SparkContext.",
    "java.lang.IllegalStateException: Spark context stopped while waiting for backend",
    "\tat org.apache.spark.",
    "Traceback (most recent call last):",
)
PROGRESS = "executors: "


def failed(
    cluster: LocalCluster, tmp_path: Path, failure: str, *options: str, **conf: str
) -> subprocess.CompletedProcess[str]:
    extra, failure_options, _ = FAILURES[failure]
    settings = on(cluster, UNPULLABLE, **extra, **conf)
    argv = command(f"pyk8s://{cluster.url}", *failure_options, *options, conf=settings)
    return run([*argv, str(APPS / "pi.py")], tmp_path)


def after_the_start(stderr: str) -> list[str]:
    """stderr from the first progress line on (before it: the JVM's start-up lines, which every run
    prints), without the progress lines."""
    lines = stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(PROGRESS))
    return [line for line in lines[first:] if not line.startswith(PROGRESS)]


@pytest.mark.parametrize("failure", FAILURES)
def test_k8s_backends_failure_of_the_application_is_one_line(
    cluster: LocalCluster, tmp_path: Path, failure: str
) -> None:
    done = failed(cluster, tmp_path, failure)
    assert done.returncode == 1, done.stderr[-4000:]
    [line] = after_the_start(done.stderr)
    assert line.startswith(FAILURES[failure][2]), done.stderr[-4000:]
    assert "spark.kubernetes." in line, "the line names what to fix"
    assert error_lines(done.stderr) == [line]
    assert_no_traceback(done.stderr)
    for noise in (" ERROR ", "Exception", *DETAIL):
        assert noise not in done.stderr, done.stderr[-4000:]
    assert cluster.wait_until(lambda: not left_on(cluster), 60), left_on(cluster)


@pytest.mark.parametrize("failure", FAILURES)
def test_v_shows_the_failures_detail(cluster: LocalCluster, tmp_path: Path, failure: str) -> None:
    done = failed(cluster, tmp_path, failure, "-v")
    assert done.returncode == 1, done.stderr[-4000:]
    for detail in DETAIL:
        assert detail in done.stderr, (detail, done.stderr[-4000:])
    assert done.stderr.rstrip().splitlines()[-1].startswith(FAILURES[failure][2])
    assert cluster.wait_until(lambda: not left_on(cluster), 60), left_on(cluster)


def test_the_jvms_last_output_comes_before_the_one_line(cluster: LocalCluster, tmp_path: Path) -> None:
    # The JVM prints its heap at exit, the last thing it prints: it used to be lost with this process.
    java_options = {"spark.driver.extraJavaOptions": f"{FAST_JVM} -Xlog:gc+heap+exit=info:stderr"}
    done = failed(cluster, tmp_path, "unpullable-image", **java_options)
    assert done.returncode == 1, done.stderr[-4000:]
    lines = done.stderr.rstrip().splitlines()
    heap = [i for i, line in enumerate(lines) if "[gc,heap,exit]" in line]
    assert heap, done.stderr[-4000:]
    assert lines[-1].startswith(FAILURES["unpullable-image"][2]) and max(heap) < len(lines) - 1


def test_ctrl_c_while_a_job_runs_is_one_line_and_cleans_up(cluster: LocalCluster, tmp_path: Path) -> None:
    conf = on(cluster, default_spark_image())
    argv = [*command(f"pyk8s://{cluster.url}", "--num-executors", "1", conf=conf), str(APPS / "slow_job.py")]
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("w") as stdout, err.open("w") as stderr:
        # A session of its own: Ctrl-C reaches the terminal's whole foreground process group.
        child = subprocess.Popen(
            argv,
            stdout=stdout,
            stderr=stderr,
            cwd=tmp_path,
            start_new_session=True,
            preexec_fn=default_sigint,
        )
        try:
            started = wait_for(lambda: "JOB STARTS" in out.read_text() and bool(executors(cluster)), 300)
            assert started, err.read_text()[-4000:]
            time.sleep(2)  # the job's tasks are running on the executor
            os.killpg(child.pid, signal.SIGINT)
            code = child.wait(timeout=300)
        finally:
            if child.poll() is None:
                child.kill()
    text = err.read_text()
    assert code == 130, text[-4000:]
    assert_no_traceback(text)
    assert "k8s-backend: interrupted; the application was stopped and its executors deleted" in text
    assert not left_on(cluster)  # deleted before the command exited


def executors(cluster: LocalCluster) -> list[str]:
    return [p["metadata"]["name"] for p in cluster.fake.objects(PODS, "default")]


def wait_for(predicate: object, timeout: float) -> bool:
    pause = threading.Event()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return True
        pause.wait(0.5)
    return False
