"""Owns a real-node LocalCluster until killed: ``python node_owner.py INFO.json``.

Starts the cluster, runs one pod from the Spark image (pass-through branch of its entrypoint), and once
the pod is Running writes what the test checks afterwards (the node's directory, bridge and cgroup root,
the pod's container id) to INFO.json; then waits for a signal.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

from k8s_backend.kube.port import PODS
from k8s_backend.local.node.runtime import CHANGES_FILE
from k8s_backend.testing import LocalCluster


def main(info_path: str) -> None:
    with LocalCluster(control_plane="kubernetes", runtime="containers") as cluster:
        api = cluster.api()
        image = cluster.spark_conf()["spark.kubernetes.container.image"]
        pod = {
            "metadata": {"name": "sleeper"},
            "spec": {
                "containers": [
                    {"name": "main", "image": image, "imagePullPolicy": "Never", "args": ["sleep", "600"]}
                ],
                "terminationGracePeriodSeconds": 1,
            },
        }
        api.create(PODS, "default", pod)
        deadline = time.monotonic() + 180
        while cluster.pod_phase("sleeper") != "Running":
            if time.monotonic() > deadline:
                raise SystemExit(f"the pod is not Running: {api.get(PODS, 'default', 'sleeper')}")
            time.sleep(0.2)
        node = cluster.node
        changes = json.loads((node.work_dir / CHANGES_FILE).read_text())
        info = {"work_dir": str(node.work_dir), **changes}
        Path(info_path).write_text(json.dumps(info))
        signal.pause()


if __name__ == "__main__":
    main(sys.argv[1])
