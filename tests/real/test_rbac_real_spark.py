"""A PySpark job (k8s_backend.spark.session, executors as JVM processes on the real control plane's
nodes) with nothing but a TokenRequest token of examples/kubernetes/driver-rbac.yaml's ``spark-driver``:
the job's answer is right and its stop leaves nothing of it in the namespace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from backend_real_support import apply_rbac, client_props, make_namespace, token_for, until

from k8s_backend.kube.port import CONFIG_MAPS, LEASES, PODS, SECRETS
from k8s_backend.local.control_plane import ControlPlaneBinaries
from k8s_backend.testing import LocalCluster

pytestmark = [pytest.mark.real, pytest.mark.timeout(1200)]

NAMESPACE = "rbac-spark"
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
DRIVER = textwrap.dedent(
    """
    import json, sys
    from k8s_backend.spark import session

    master, conf = sys.argv[1], json.loads(sys.argv[2])
    spark = session(master, conf, "rbac-spark")
    try:
        sc = spark.sparkContext
        answer = sc.parallelize(range(1000), 4).sum()
        print(json.dumps({"answer": answer, "app": sc.applicationId}), flush=True)
    finally:
        spark.stop()
    """
)


@pytest.fixture(scope="module")
def cluster(binaries: ControlPlaneBinaries) -> Iterator[LocalCluster]:
    with LocalCluster(control_plane="kubernetes") as local:  # executors run as JVMs
        make_namespace(local, NAMESPACE)
        apply_rbac(local, NAMESPACE)
        yield local


def test_a_pyspark_job_runs_and_cleans_up_with_the_driver_token_alone(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    props = client_props(cluster, NAMESPACE, token_for(cluster, NAMESPACE, "spark-driver"))
    master = props.pop("spark.master")
    conf = {
        **props,
        "spark.kubernetes.container.image": cluster.spark_conf()["spark.kubernetes.container.image"],
        "spark.executor.instances": "2",
        "spark.executor.memory": "512m",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": FAST_JVM,
        "spark.executor.extraJavaOptions": FAST_JVM,
    }
    # No kubeconfig or service account of the environment: the token in conf is all there is.
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env["HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, master, json.dumps(conf)],
        capture_output=True, text=True, timeout=900, check=False, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-5000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["answer"] == sum(range(1000))
    admin = cluster.api(NAMESPACE)
    selector = f"spark-app-selector={result['app']}"
    until(lambda: admin.list(PODS, NAMESPACE, label_selector=selector).items == [], "no executor pod left")
    # The executor ConfigMap is owned by the heartbeat Lease: the real garbage collector takes it.
    until(lambda: admin.list(CONFIG_MAPS, NAMESPACE, label_selector=selector).items == [], "ConfigMap gone")
    assert admin.list(SECRETS, NAMESPACE, label_selector=selector).items == []
    assert admin.list(LEASES, NAMESPACE).items == []
    # Reading nodes needs the optional ClusterRole (examples/kubernetes/driver-nodes-rbac.yaml): without
    # it, one warning; nothing else may be refused.
    refused = [line for line in done.stderr.splitlines() if "forbidden" in line.lower()]
    assert [line for line in refused if "Cannot read nodes" not in line] == [], done.stderr[-5000:]
