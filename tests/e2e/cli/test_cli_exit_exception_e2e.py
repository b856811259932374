"""A cluster-mode driver on a LocalCluster, run as a user runs it: with
``spark.kubernetes.driver.annotateExitException`` its uncaught exception ends up on its pod, and the
executors' NetworkPolicy is created owned by that pod."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest
from cli_support import APPS

from k8s_backend.kube.port import NETWORK_POLICIES, PODS
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

TOKEN = "exit-e2e-token"
CONF = {
    "spark.kubernetes.container.image": "apache/spark:4.0.0",
    "spark.ui.enabled": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.kubernetes.authenticate.oauthToken": TOKEN,
    "spark.kubernetes.driver.annotateExitException": "true",
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(token=TOKEN) as running:
        yield running


def test_the_failed_driver_s_exception_is_on_its_pod_and_the_policy_is_its_own(cluster: LocalCluster) -> None:
    script = shutil.which("k8s-backend")
    start = [script] if script else [sys.executable, "-m", "k8s_backend.cli.main"]
    confs = [item for key, value in CONF.items() for item in ("--conf", f"{key}={value}")]
    argv = [*start, "submit", "--master", f"pyk8s://{cluster.url}", "--deploy-mode", "cluster", *confs]
    done = subprocess.run(
        [*argv, str(APPS / "fail.py")], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 1, done.stderr[-3000:]
    submission = re.search(r"submission ID (\S+)", done.stderr)
    assert submission is not None, done.stderr[-3000:]
    driver = submission.group(1).split(":")[1]
    pod = cluster.fake.get(PODS, "default", driver)
    text = pod["metadata"]["annotations"]["spark.exit-exception"]
    assert text.startswith("Traceback"), text
    assert "RuntimeError: the application failed on purpose" in text
    [policy] = [
        p
        for p in cluster.fake.objects(NETWORK_POLICIES, "default")
        if p["metadata"]["ownerReferences"][0]["name"] == driver
    ]
    assert policy["spec"]["podSelector"]["matchLabels"]["spark-role"] == "executor"
