"""A PySpark driver for the node tier's parity tests, run in a fresh Python process (its own JVM).

``python node_parity_support.py BACKEND OUT.json CLUSTER.json``: BACKEND is ``spark`` (Spark's own JVM
backend, ``k8s://``) or ``k8s_backend`` (:func:`k8s_backend.spark.session`, ``pyk8s://``). CLUSTER.json
holds ``master`` (for that backend), ``conf`` (the Spark properties) and ``url``, ``token``, ``ca`` (to
read the executor pods). Both run the same job, the node tier's; the observations go to OUT.json: the
answer, the executors registered, what each executor's Python worker saw of its container, and the
executor pods as the API server had them while they ran.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

JOB_CONF = {  # the node tier's job (node_support.py)
    "spark.executor.instances": "2",
    "spark.executor.cores": "1",
    "spark.executor.memory": "512m",
    "spark.kubernetes.executor.request.cores": "100m",
    "spark.kubernetes.container.image.pullPolicy": "Never",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
EXECUTORS = 2


def inside(_: object) -> list[dict[str, Any]]:
    """Runs in the executor's Python worker: the container's view of itself (user, groups, local dirs,
    the template's /scratch emptyDir, the service account's token)."""
    import base64
    import os
    import platform
    import pwd
    import uuid

    def owner(path: str) -> list[int] | None:
        if not os.path.exists(path):
            return None
        st = os.stat(path)
        return [st.st_uid, st.st_gid, st.st_mode & 0o7777]

    try:
        user: str | None = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        user = None
    scratch_file = None
    if os.path.isdir("/scratch"):
        scratch_file = f"/scratch/{uuid.uuid4()}"
        Path(scratch_file).write_text("written by the executor")
    claims: dict[str, Any] = {}
    token = SERVICE_ACCOUNT / "token"
    if token.exists():
        payload = token.read_text().split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    namespace = SERVICE_ACCOUNT / "namespace"
    # The Python worker's SPARK_LOCAL_DIRS are the block manager's dirs, inside the mounted local dirs.
    local_dirs = [d for d in os.environ.get("SPARK_LOCAL_DIRS", "").split(",") if d]
    with open("/proc/self/mounts") as mounts:
        mount_points = [line.split()[1] for line in mounts]
    return [{
        "pod": os.environ.get("SPARK_EXECUTOR_POD_NAME"),
        "python": platform.python_version(),
        "uid": os.getuid(),
        "gid": os.getgid(),
        "groups": sorted(os.getgroups()),
        "user": user,
        "cwd": os.getcwd(),
        "local_dirs": {d: owner(d) for d in local_dirs},
        "mounts": {m: owner(m) for m in mount_points if m.startswith(("/var/data/", "/scratch"))},
        "scratch": owner("/scratch"),
        "scratch_file": owner(scratch_file) if scratch_file else None,
        "token_subject": claims.get("sub"),
        "sa_namespace": namespace.read_text() if namespace.exists() else None,
    }]  # fmt: skip


def executor_pods(cluster: dict[str, Any], app_id: str) -> list[dict[str, Any]]:
    """The application's executor pods, read with the cluster's own credentials only."""
    from k8s_backend.kube.client import OfficialKubernetesApi
    from k8s_backend.kube.port import PODS
    from k8s_backend.kube.settings import ApiClientConf

    conf = ApiClientConf(master=cluster["url"], oauth_token=cluster["token"], ca_cert_file=cluster["ca"])
    api = OfficialKubernetesApi.from_conf(conf, namespace_default="default", environ={"HOME": "/nonexistent"})
    selector = f"spark-app-selector={app_id},spark-role=executor"
    return [dict(pod) for pod in api.list(PODS, "default", label_selector=selector).items]


def start(backend: str, cluster: dict[str, Any]) -> Any:
    conf = {**cluster["conf"], **JOB_CONF}
    conf.pop("spark.master", None)
    if backend == "k8s_backend":
        from k8s_backend.spark import session

        return session(cluster["master"], conf, app_name="node-parity")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(cluster["master"]).appName("node-parity")
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def main(backend: str, out_path: str, cluster_path: str) -> None:
    cluster = json.loads(Path(cluster_path).read_text())
    report: dict[str, Any] = {}
    spark = start(backend, cluster)
    try:
        sc = spark.sparkContext
        report["app"] = sc.applicationId
        deadline = time.monotonic() + 240
        while sc._jsc.sc().getExecutorMemoryStatus().size() - 1 < EXECUTORS and time.monotonic() < deadline:
            time.sleep(0.5)
        report["registered"] = sc._jsc.sc().getExecutorMemoryStatus().size() - 1
        report["answer"] = sc.parallelize(range(10_000), 8).map(lambda x: x * x).sum()
        views = sc.parallelize(range(8), 8).mapPartitions(inside).collect()
        report["workers"] = list({view["pod"]: view for view in views}.values())
        report["executor_hosts"] = sorted(e.host() for e in sc._jsc.sc().statusTracker().getExecutorInfos())
        report["driver_python"] = sys.version.split()[0]
        report["pods"] = executor_pods(cluster, sc.applicationId)
    finally:
        spark.stop()
        report["stopped"] = True
        Path(out_path).write_text(json.dumps(report))


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("spark", "k8s_backend"):
        sys.exit("usage: node_parity_support.py {spark,k8s_backend} OUT.json CLUSTER.json")
    main(sys.argv[1], sys.argv[2], sys.argv[3])
