"""A real client-mode driver publishes which executors registered with it through its heartbeat Lease,
and ``k8s-backend status`` shows them: ``k8s-backend submit`` runs a long application against a
LocalCluster in the test's process; once its job ran, ``status -o json`` says its executor is registered."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import APPS, cli
from test_cli_errors_e2e import CONF, default_sigint, wait_for

from k8s_backend.cli.common.cluster_api import Connection
from k8s_backend.cli.common.errors import ApiEndpoint
from k8s_backend.kube.port import PODS
from k8s_backend.local.images import default_spark_image
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def test_status_shows_the_executor_registered_with_a_real_driver(tmp_path: Path) -> None:
    with LocalCluster(known_images=[default_spark_image()]) as cluster:
        conf = {
            **CONF,
            "spark.kubernetes.authenticate.oauthToken": cluster.token,
            "spark.kubernetes.container.image": default_spark_image(),
            "spark.kubernetes.driver.heartbeat.leaseDuration": "3s",  # renewed every second
        }
        confs = [item for key, value in conf.items() for item in ("--conf", f"{key}={value}")]
        argv = [sys.executable, "-m", "k8s_backend.cli.main", "submit", "--master", f"pyk8s://{cluster.url}"]
        argv += [*confs, "--num-executors", "1", str(APPS / "sleeper.py")]
        out = tmp_path / "out"
        with out.open("w") as stdout:
            child = subprocess.Popen(
                argv, stdout=stdout, stderr=subprocess.DEVNULL, cwd=tmp_path, start_new_session=True,
                preexec_fn=default_sigint,
            )  # fmt: skip
            try:
                assert wait_for(lambda: "SUM" in out.read_text(), 300), "the application's job ran"
                [pod] = cluster.fake.objects(PODS, "default")
                app_id = pod["metadata"]["labels"]["spark-app-selector"]
                api = cluster.api("default")

                def connect(*_: object) -> Connection:
                    return Connection(api, ApiEndpoint(cluster.url, "test"))

                def registered() -> list[object]:
                    result = cli(["status", "--master", f"pyk8s://{cluster.url}", app_id, "-o", "json"],
                                 connect=connect)  # fmt: skip
                    [app] = json.loads(result.out)["applications"]
                    return [(e["id"], e["phase"], e["registered"]) for e in app["executors"]]

                assert wait_for(lambda: registered() == [("1", "Running", True)], 30), registered()
            finally:
                if child.poll() is None:
                    os.killpg(child.pid, signal.SIGINT)
                    child.wait(timeout=120)
