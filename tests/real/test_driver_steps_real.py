"""The driver pod's feature steps against the real kube-apiserver: what each step writes is accepted
(the pod, its on-demand claim, the Hadoop ConfigMap, the Service with its IP family settings), and what
the pod owns is garbage-collected with it.

Marked ``real``: skipped (with the one-line reason) when the control plane is neither cached nor buildable.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from k8s_backend.cli.common.submit_args import parse_submit_args
from k8s_backend.cli.submit.cluster_mode import ClusterPlan, plan_cluster
from k8s_backend.cli.submit.submission import build_submission
from k8s_backend.kube.masters import IN_CLUSTER_MASTER
from k8s_backend.kube.port import CONFIG_MAPS, PODS, PVCS, SERVICES, ApiError
from k8s_backend.local.control_plane import ControlPlane

pytestmark = [pytest.mark.real, pytest.mark.timeout(600)]

V = "spark.kubernetes.driver.volumes."


def plan(tmp_path: Path, app_name: str, *confs: str, environ: dict[str, str] | None = None) -> ClusterPlan:
    app = tmp_path / "main.py"
    app.write_text("print(1)\n")
    argv = ["--master", "pyk8s://https://k8s.example:6443", "--deploy-mode", "cluster", "--name", app_name]
    for conf in ("spark.kubernetes.container.image=spark:py", "spark.kubernetes.namespace=default", *confs):
        argv += ["--conf", conf]
    sub = build_submission(parse_submit_args([*argv, str(app)]), {})
    return plan_cluster(sub, IN_CLUSTER_MASTER, api_url="https://k8s.example:6443", environ=environ or {})


def test_the_api_server_accepts_every_driver_step_and_collects_what_the_pod_owns(
    cp: ControlPlane, tmp_path: Path
) -> None:
    api = cp.api()
    hadoop = tmp_path / "hadoop"
    hadoop.mkdir()
    (hadoop / "core-site.xml").write_text("<configuration/>\n")
    p = plan(
        tmp_path,
        "steps",
        "spark.kubernetes.driver.secrets.db-creds=/etc/db",
        "spark.kubernetes.driver.secretKeyRef.DB_PASSWORD=db-creds:password",
        f"{V}persistentVolumeClaim.data.mount.path=/data",
        f"{V}persistentVolumeClaim.data.options.claimName=OnDemand",
        f"{V}persistentVolumeClaim.data.options.storageClass=standard",
        f"{V}persistentVolumeClaim.data.options.sizeLimit=1Gi",
        f"{V}persistentVolumeClaim.data.label.tier=gold",
        f"{V}emptyDir.scratch.mount.path=/scratch",
        f"{V}emptyDir.scratch.options.medium=Memory",
        f"{V}emptyDir.scratch.options.sizeLimit=64Mi",
        f"{V}hostPath.logs.mount.path=/logs",
        f"{V}hostPath.logs.options.path=/var/log/app",
        f"{V}hostPath.logs.options.type=DirectoryOrCreate",
        f"{V}nfs.share.mount.path=/share",
        f"{V}nfs.share.mount.readOnly=true",
        f"{V}nfs.share.options.server=nfs.example",
        f"{V}nfs.share.options.path=/exports",
        "spark.kubernetes.driver.service.ipFamilyPolicy=PreferDualStack",
        "spark.kubernetes.driver.service.ipFamilies=IPv4",
        "spark.kubernetes.driver.service.publishNotReadyAddresses=true",
        environ={"HADOOP_CONF_DIR": str(hadoop)},
    )
    pod = api.create(PODS, "default", p.pod)
    container = pod["spec"]["containers"][0]
    assert {m["mountPath"] for m in container["volumeMounts"]} >= {
        "/etc/db",
        "/data",
        "/scratch",
        "/logs",
        "/share",
    }
    env = {e["name"]: e.get("valueFrom") for e in container["env"]}
    assert env["DB_PASSWORD"] == {"secretKeyRef": {"name": "db-creds", "key": "password"}}
    [claim] = p.owned_claims(pod)
    created_claim = api.create(PVCS, "default", claim)
    assert created_claim["metadata"]["labels"]["tier"] == "gold"
    hadoop_map = p.owned_hadoop_config_map(pod)
    assert hadoop_map is not None
    assert api.create(CONFIG_MAPS, "default", hadoop_map)["data"] == {"core-site.xml": "<configuration/>\n"}
    service = api.create(SERVICES, "default", p.service(pod))
    assert service["spec"]["ipFamilyPolicy"] == "PreferDualStack"
    assert service["spec"]["ipFamilies"] == ["IPv4"]
    assert service["spec"]["publishNotReadyAddresses"] is True
    api.delete(PODS, "default", p.names.pod, grace_period_seconds=0)
    deadline = time.monotonic() + 60
    names = {claim["metadata"]["name"]}
    while (
        names & {c["metadata"]["name"] for c in api.list(PVCS, "default").items}
        or any(s["metadata"]["name"] == p.names.service for s in api.list(SERVICES, "default").items)
        or any(
            c["metadata"]["name"] == hadoop_map["metadata"]["name"]
            for c in api.list(CONFIG_MAPS, "default").items
        )
    ):
        assert time.monotonic() < deadline, (
            "the claim, the Service or the Hadoop ConfigMap outlived the driver pod that owns them"
        )
        time.sleep(0.2)


def test_what_the_api_server_refuses_the_plan_refuses_first(cp: ControlPlane, tmp_path: Path) -> None:
    # Two families under SingleStack: the API server refuses the Service (only after the pod exists), so
    # the plan refuses the key before anything is created.
    api = cp.api()
    p = plan(tmp_path, "dual")
    pod = api.create(PODS, "default", p.pod)
    try:
        body = p.service(pod)
        body["spec"]["ipFamilies"] = ["IPv4", "IPv6"]
        with pytest.raises(ApiError):
            api.create(SERVICES, "default", body)
    finally:
        api.delete(PODS, "default", p.names.pod, grace_period_seconds=0)
    from k8s_backend.cli.common.errors import UsageError

    with pytest.raises(UsageError, match=r"ipFamilies=IPv4,IPv6 lists two families"):
        plan(tmp_path, "dual2", "spark.kubernetes.driver.service.ipFamilies=IPv4,IPv6")
