"""Cluster mode on ``pyk8s://local`` (with a stand-in cluster) and following the driver's log."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cli_support import APPS, OnWatch, cli

from k8s_backend.cli.common.driver_log import FileLogSource, LogFollower, api_log_source
from k8s_backend.cli.common.properties import parse_properties
from k8s_backend.kube.port import CONFIG_MAPS, PODS, SECRETS
from k8s_backend.testing import FakeKubernetes


class StandInKubelet:
    def __init__(self, log: Path) -> None:
        self.log = log

    def log_path(self, namespace: str, name: str, container: str) -> Path | None:
        return self.log if container == "spark-kubernetes-driver" else None


class StandInCluster:
    """What cluster mode uses of a LocalCluster: url, token, api(), kubelet.log_path()."""

    url = "http://127.0.0.1:39999"
    token = "stand-in-token"

    def __init__(self, api: Any, log: Path) -> None:
        self._api = api
        self.kubelet = StandInKubelet(log)
        self.started = self.stopped = False

    def api(self, namespace: str = "default") -> Any:
        return self._api

    @contextmanager
    def running(self) -> Iterator[StandInCluster]:
        self.started = True
        try:
            yield self
        finally:
            self.stopped = True


def test_cluster_mode_on_the_local_cluster_points_the_driver_at_it_and_follows_its_log(
    tmp_path: Path,
) -> None:
    fake = FakeKubernetes()
    log = tmp_path / "driver.log"
    log.write_text("driver starting\nPi is roughly 3.14\n")

    def driver_finishes() -> None:
        (pod,) = fake.objects(PODS)
        state = {"terminated": {"exitCode": 0, "reason": "Completed"}}
        fake.patch_status(
            PODS,
            "default",
            pod["metadata"]["name"],
            {
                "phase": "Succeeded",
                "containerStatuses": [{"name": "spark-kubernetes-driver", "state": state}],
            },
        )

    cluster = StandInCluster(OnWatch(fake, driver_finishes), log)
    argv = [
        "submit",
        "--master",
        "pyk8s://local",
        "--deploy-mode",
        "cluster",
        "--follow-log",
        str(APPS / "pi.py"),
    ]
    result = cli(argv, fake, local_cluster=cluster.running)
    assert result.code == 0, result.err
    assert cluster.started and cluster.stopped
    assert result.out.splitlines() == ["driver starting", "Pi is roughly 3.14"]
    (config_map,) = fake.objects(CONFIG_MAPS)
    props = parse_properties(config_map["data"]["spark.properties"])
    assert props["spark.master"] == "pyk8s://http://127.0.0.1:39999"
    assert props["spark.kubernetes.container.image"].startswith("apache/spark:")
    # The driver reaches the cluster with its token, from a Secret rather than the ConfigMap.
    assert "stand-in-token" not in str(config_map)
    assert props["spark.kubernetes.authenticate.oauthTokenFile"] == "/opt/spark/secrets/k8s-token/token"
    (secret,) = fake.objects(SECRETS)
    assert base64.b64decode(secret["data"]["token"]).decode() == "stand-in-token"


def test_file_log_source_waits_for_the_file_and_drains_it_after_stop(tmp_path: Path) -> None:
    log = tmp_path / "c.log"
    located: list[int] = []

    def locate() -> Path | None:
        located.append(1)
        if len(located) == 2:
            log.write_text("one\ntwo\npartial")
        return log if len(located) >= 2 else None

    stop = threading.Event()
    stop_after_first_wait = FileLogSource(locate, poll=0.0)
    lines = stop_after_first_wait.lines(stop)
    assert next(lines) == "one"
    stop.set()
    assert list(lines) == ["two", "partial"]


def test_file_log_source_gives_up_when_stopped_before_any_log(tmp_path: Path) -> None:
    stop = threading.Event()
    stop.set()
    assert list(FileLogSource(lambda: None).lines(stop)) == []


def test_log_follower_copies_lines_and_survives_a_failing_source(tmp_path: Path) -> None:
    log = tmp_path / "c.log"
    log.write_text("a\nb\n")
    got: list[str] = []
    follower = LogFollower(FileLogSource(lambda: log, poll=0.0), got.append).start()
    follower.finish()
    assert got == ["a", "b"]

    class Broken:
        def lines(self, stop: threading.Event) -> Iterator[str]:
            yield "first"
            raise OSError("connection reset")

    out: list[str] = []
    LogFollower(Broken(), out.append).start().finish()
    assert out == ["first"]


def test_api_log_source_only_for_adapters_that_stream_logs() -> None:
    assert api_log_source(FakeKubernetes(), "ns", "p", "c") is None

    class Streaming:
        def pod_log(self, namespace: str, name: str, *, container: str, follow: bool) -> Iterator[str]:
            assert (namespace, name, container, follow) == ("ns", "p", "c", True)
            yield from ["x", "y"]

    source = api_log_source(Streaming(), "ns", "p", "c")
    assert source is not None
    assert list(source.lines(threading.Event())) == ["x", "y"]


def test_follow_log_without_a_log_stream_says_how_to_get_the_log() -> None:
    fake = FakeKubernetes()

    def finish() -> None:
        (pod,) = fake.objects(PODS)
        fake.patch_status(PODS, "default", pod["metadata"]["name"], {"phase": "Succeeded"})

    argv = [
        "submit",
        "--master",
        "pyk8s://https://k8s.test:6443",
        "--deploy-mode",
        "cluster",
        "--follow-log",
        "--conf",
        "spark.kubernetes.container.image=i",
        str(APPS / "pi.py"),
    ]
    result = cli(argv, OnWatch(fake, finish))
    assert result.code == 0
    assert "run `kubectl logs -f -n default " in result.err
