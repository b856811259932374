"""An application that the backend fails while its SparkContext starts leaves nothing behind.

A real PySpark driver in a fresh process, against a LocalCluster in that process whose kubelet cannot pull
the executor image: the backend fails the application (imagePullFailTimeout), the SparkContext fails to
start, and no executor pod (Pending or otherwise) and no executor ConfigMap is left on the cluster.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

SCENARIO = textwrap.dedent(
    """
    import json, sys, time
    from k8s_backend.kube.port import CONFIG_MAPS, PODS
    from k8s_backend.local import LocalCluster
    from k8s_backend.spark import session

    seen = {}
    with LocalCluster(known_images=["apache/spark"]) as cluster:
        conf = {
            "spark.kubernetes.container.image": "nosuch/image:1",
            "spark.executor.instances": "2",
            "spark.executor.memory": "512m",
            "spark.ui.enabled": "false",
            "spark.kubernetes.authenticate.oauthToken": cluster.token,
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.kubernetes.executor.imagePullFailTimeout": "3s",
        }
        try:
            spark = session(f"pyk8s://{cluster.url}", conf, "unpullable")
            seen["session"] = "started"
            spark.stop()
        except Exception as error:
            seen["session"] = f"{type(error).__name__}: {error}"
        seen["pods_created"] = len(cluster.fake.calls_of("create", PODS))

        def nothing_left():
            fake = cluster.fake
            return fake.objects(PODS, "default") == [] and fake.objects(CONFIG_MAPS, "default") == []

        gone = cluster.wait_until(nothing_left, 60)
        seen["pods"] = [p["metadata"]["name"] for p in cluster.fake.objects(PODS, "default")]
        seen["config_maps"] = [m["metadata"]["name"] for m in cluster.fake.objects(CONFIG_MAPS, "default")]
        seen["gone"] = gone
    print("SEEN " + json.dumps(seen), flush=True)
    """
)


def test_an_unpullable_image_fails_the_start_and_leaves_no_pod_or_config_map() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCENARIO], capture_output=True, text=True, timeout=500, check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("SEEN ")]
    assert done.returncode == 0 and lines, done.stderr[-5000:]
    seen = json.loads(lines[-1][len("SEEN ") :])
    assert seen["session"] != "started", "the backend failed the application while the context started"
    # session() says why in one line, not with the Java error that followed (issue 13, section 5).
    told = "ApplicationFailedError: Executor image nosuch/image:1 cannot be pulled"
    assert seen["session"].startswith(told), seen["session"]
    assert seen["pods_created"] >= 2, "executor pods were created (and stayed Pending) before the failure"
    assert seen["gone"], seen
    assert seen["pods"] == [] and seen["config_maps"] == []
