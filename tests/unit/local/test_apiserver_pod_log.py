"""The embedded API server's ``pods/{name}/log``: answers as a real server does, follows a growing log
until the container ended, and the official client's adapter and ``--follow-log`` read it."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from k8s_backend.cli.common.driver_log import ApiLogSource
from k8s_backend.kube.client import OfficialKubernetesApi
from k8s_backend.kube.port import PODS
from k8s_backend.kube.settings import ApiClientConf
from k8s_backend.local.apiserver.server import ApiServer
from k8s_backend.testing import FakeKubernetes

WAIT = 60.0


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[FakeKubernetes, ApiServer, Path]]:
    fake = FakeKubernetes()
    log_file = tmp_path / "driver.log"
    containers = [{"name": "driver", "image": "i"}, {"name": "sidecar", "image": "i"}]
    fake.create(PODS, "default", {"metadata": {"name": "p"}, "spec": {"containers": containers}})
    fake.create(PODS, "default", {"metadata": {"name": "one"}, "spec": {"containers": containers[:1]}})

    def locate(namespace: str, name: str, container: str) -> Path | None:
        return log_file if (namespace, container) == ("default", "driver") and log_file.exists() else None

    with ApiServer(fake, logs=locate) as server:
        yield fake, server, log_file


def set_state(fake: FakeKubernetes, name: str, state: dict[str, Any]) -> None:
    status = {"phase": "Running", "containerStatuses": [{"name": "driver", "state": state}]}
    fake.patch_status(PODS, "default", name, status)


def get(server: ApiServer, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(server.url + path, timeout=WAIT) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def adapter(server: ApiServer) -> OfficialKubernetesApi:
    return OfficialKubernetesApi.from_conf(
        ApiClientConf(master=server.url), namespace_default="default", environ={"HOME": "/nonexistent"}
    )


LOG = "/api/v1/namespaces/default/pods/{}/log"


def test_the_answers_before_the_log_exists_are_the_real_servers(served: Any) -> None:
    fake, server, _ = served
    code, body = get(server, LOG.format("missing"))
    assert code == 404 and '"reason":"NotFound"' in body
    code, body = get(server, LOG.format("p"))
    assert code == 400
    assert "a container name must be specified for pod p, choose one of: [driver sidecar]" in body
    code, body = get(server, LOG.format("p") + "?container=nope")
    assert code == 400 and "container nope is not valid for pod p" in body
    set_state(fake, "one", {"waiting": {"reason": "ErrImagePull"}})
    code, body = get(server, LOG.format("one"))
    assert code == 400 and 'container \\"driver\\" in pod \\"one\\" is waiting to start: ErrImagePull' in body
    code, body = get(server, LOG.format("one") + "?tailLines=x")
    assert code == 400 and "tailLines" in body


def test_the_text_with_tail_lines_and_limit_bytes(served: Any) -> None:
    fake, server, log_file = served
    log_file.write_text("a\nb\nc\n")
    set_state(fake, "one", {"running": {}})
    set_state(fake, "p", {"running": {}})
    assert get(server, LOG.format("one")) == (200, "a\nb\nc\n")
    assert get(server, LOG.format("one") + "?tailLines=2") == (200, "b\nc\n")
    assert get(server, LOG.format("p") + "?container=driver&limitBytes=3") == (200, "a\nb")


def test_follow_streams_new_lines_until_the_container_terminated(served: Any) -> None:
    fake, server, log_file = served
    log_file.write_text("first\n")
    set_state(fake, "one", {"running": {}})
    api = adapter(server)
    seen: list[str] = []
    got_first = threading.Event()
    done = threading.Event()

    def follow() -> None:
        for line in api.pod_log("default", "one", container="driver", follow=True):
            seen.append(line)
            got_first.set()
        done.set()

    threading.Thread(target=follow, daemon=True).start()
    assert got_first.wait(WAIT)
    with log_file.open("a") as handle:
        handle.write("second\nthird\n")
    set_state(fake, "one", {"terminated": {"exitCode": 0, "reason": "Completed"}})
    assert done.wait(WAIT), "the followed log did not end with its container"
    assert seen == ["first", "second", "third"]
    api.close()


def test_follow_log_waits_for_a_pending_driver_instead_of_giving_up(served: Any) -> None:
    fake, server, log_file = served
    set_state(fake, "one", {"waiting": {"reason": "ContainerCreating"}})
    api = adapter(server)
    source = ApiLogSource(api.pod_log, "default", "one", "driver", poll=0.01)
    stop = threading.Event()
    lines: list[str] = []
    done = threading.Event()

    def run() -> None:
        lines.extend(source.lines(stop))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    # The source keeps asking while the container waits (each ask is answered 400).
    assert_eventually(lambda: sum(1 for r in server.request_log if r.status == 400) >= 2)
    log_file.write_text("hello from the driver\n")
    set_state(fake, "one", {"terminated": {"exitCode": 0, "reason": "Completed"}})
    assert done.wait(WAIT)
    assert lines == ["hello from the driver"]
    api.close()


def assert_eventually(predicate: Any) -> None:
    pause = threading.Event()
    for _ in range(int(WAIT / 0.01)):
        if predicate():
            return
        pause.wait(0.01)
    assert predicate()
