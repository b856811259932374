"""Characterization of the cluster-mode driver pod: for representative property sets, the whole plan
(pod, claims, Service, Secret, ConfigMap, the driver's properties) equals a golden JSON recorded before
the driver pod became ordered steps in ``pods/driver/`` (issue 20), so moving the code changes nothing.

Re-record only for an intended change: ``K8S_BACKEND_RECORD_GOLDEN=1 pytest <this file>``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from test_cli_driver_pod import NAMES, POD

from k8s_backend.cli.common.submit_args import parse_submit_args
from k8s_backend.cli.submit.cluster_mode import ClusterPlan, plan_cluster
from k8s_backend.cli.submit.submission import build_submission
from k8s_backend.kube.masters import IN_CLUSTER_MASTER
from k8s_backend.pods.constants import SPARK_VERSION_LABEL

GOLDEN = Path(__file__).parent / "golden" / "driver_pod_plans.json"
LOOPBACK = "http://127.0.0.1:5"
# Every case sets spark.local.dir (no generated directory) and SPARK_USER (not this machine's user).
COMMON = {"spark.local.dir": "/tmp/spark-local", "spark.kubernetes.driverEnv.SPARK_USER": "alice"}


def _files(tmp: Path) -> dict[str, str]:
    for name, text in (("ca.pem", "CA"), ("cert.pem", "CERT"), ("key.pem", "KEY"), ("tok", "FILETOK")):
        (tmp / name).write_text(text)
    (tmp / "driver.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  labels: {tier: gold}\n  annotations: {a: b}\nspec:\n"
        "  priorityClassName: high\n  nodeSelector: {zone: z1}\n"
        "  volumes: [{name: extra, emptyDir: {}}]\n  containers:\n  - name: sidecar\n    image: busybox\n"
        "  - name: main\n    image: ignored\n    command: [sh]\n    env: [{name: KEEP, value: '1'}]\n"
        "    resources: {requests: {ephemeral-storage: 1Gi}, limits: {cpu: '9'}}\n"
        "    securityContext: {runAsUser: 185, allowPrivilegeEscalation: true}\n"
        "    volumeMounts: [{name: extra, mountPath: /extra}]\n"
    )
    return {"tmp": str(tmp)}


def _cases(tmp: Path) -> dict[str, tuple[dict[str, str], dict[str, Any]]]:
    """Case name -> (properties, plan_cluster keyword arguments besides the names)."""
    auth = "spark.kubernetes.authenticate."
    loopback: dict[str, Any] = {"master": "pyk8s://" + LOOPBACK, "api_url": LOOPBACK}
    return {
        "basic": (
            {
                "spark.app.name": "My App",
                "spark.driver.memory": "2g",
                "spark.driver.cores": "2",
                "spark.kubernetes.driver.label.team": "data",
                "spark.kubernetes.driver.annotation.owner": "me",
                "spark.kubernetes.node.selector.disk": "ssd",
                "spark.kubernetes.driver.node.selector.zone": "a",
                "spark.kubernetes.container.image.pullSecrets": "reg1, reg2",
                "spark.kubernetes.container.image.pullPolicy": "Always",
                "spark.kubernetes.driver.scheduler.name": "volcano",
                "spark.kubernetes.authenticate.driver.serviceAccountName": "spark-sa",
                "spark.kubernetes.driverEnv.FOO": "bar",
                "spark.pyspark.python": "python3",
                "spark.pyspark.driver.python": "python3.11",
            },
            {},
        ),
        "resources_ports_service": (
            {
                "spark.driver.memory": "3g",
                "spark.driver.memoryOverhead": "500m",
                "spark.kubernetes.driver.request.cores": "500m",
                "spark.kubernetes.driver.limit.cores": "2",
                "spark.driver.port": "8000",
                "spark.driver.blockManager.port": "8001",
                "spark.ui.port": "8002",
                "spark.kubernetes.driver.service.ipFamilyPolicy": "PreferDualStack",
                "spark.kubernetes.driver.service.ipFamilies": "IPv6,IPv4",
                "spark.kubernetes.driver.service.publishNotReadyAddresses": "true",
                "spark.kubernetes.driver.service.label.svc": "x",
                "spark.kubernetes.driver.service.annotation.note": "y",
                "spark.kubernetes.driver.securityContext.allowPrivilegeEscalation": "true",
                "spark.kubernetes.driver.container.image": "driver:img",
            },
            {},
        ),
        "token_and_secret_properties": (
            {
                f"{auth}driver.oauthToken": "TOPSECRET",
                "spark.authenticate": "true",
                "spark.authenticate.secret": "rpc-secret",
                "spark.hadoop.fs.s3a.secret.key": "s3-secret",
            },
            {},
        ),
        "client_certs_mounted_family": (
            {
                f"{auth}driver.caCertFile": f"{tmp}/ca.pem",
                f"{auth}driver.clientCertFile": f"{tmp}/cert.pem",
                f"{auth}driver.clientKeyFile": f"{tmp}/key.pem",
                f"{auth}driver.oauthTokenFile": f"{tmp}/tok",
            },
            {},
        ),
        "mounted_family_given": (
            {
                f"{auth}driver.mounted.oauthTokenFile": "/in/pod/token",
                f"{auth}driver.mounted.caCertFile": "/in/pod/ca",
                f"{auth}driver.clientCertFile": f"{tmp}/cert.pem",
            },
            {},
        ),
        "loopback_borrowed": (
            {},
            {
                **loopback,
                "submission_token": "sub-tok",
                "submission_files": {
                    "caCertFile": b"LCA",
                    "clientCertFile": b"LCERT",
                    "clientKeyFile": b"LKEY",
                },
                "submission_verifies_tls": False,
            },
        ),
        "loopback_joins_mounted_family": (
            {f"{auth}driver.caCertFile": f"{tmp}/ca.pem"},
            {**loopback, "submission_token": "sub-tok", "submission_files": {"clientCertFile": b"LCERT"}},
        ),
        "template": (
            {
                "spark.kubernetes.driver.podTemplateFile": f"{tmp}/driver.yaml",
                "spark.kubernetes.driver.podTemplateContainerName": "main",
                "spark.kubernetes.driver.node.selector.zone": "a",
                "spark.kubernetes.driver.annotation.c": "d",
            },
            {},
        ),
        "volumes_secrets_local_dirs_hadoop": (
            {
                "spark.kubernetes.driver.secrets.db-creds": "/etc/db",
                "spark.kubernetes.driver.secretKeyRef.DB_PASS": "db-creds:password",
                "spark.kubernetes.driver.volumes.hostPath.data.mount.path": "/data",
                "spark.kubernetes.driver.volumes.hostPath.data.options.path": "/mnt/data",
                "spark.kubernetes.driver.volumes.emptyDir.scratch.mount.path": "/scratch",
                "spark.kubernetes.driver.volumes.emptyDir.scratch.options.sizeLimit": "1Gi",
                "spark.kubernetes.driver.volumes.persistentVolumeClaim.spark-local-dir-1.mount.path": "/ld",
                "spark.kubernetes.driver.volumes.persistentVolumeClaim.spark-local-dir-1.options.claimName": (
                    "OnDemand"
                ),
                "spark.kubernetes.driver.volumes.persistentVolumeClaim.spark-local-dir-1.options"
                ".storageClass": "fast",
                "spark.kubernetes.driver.volumes.persistentVolumeClaim.spark-local-dir-1.options.sizeLimit": (
                    "10Gi"
                ),
                "spark.kubernetes.local.dirs.tmpfs": "true",
                "spark.kubernetes.hadoop.configMapName": "my-hadoop",
            },
            {},
        ),
    }


def _plan(tmp: Path, properties: dict[str, str], kwargs: dict[str, Any]) -> ClusterPlan:
    argv = ["--master", "pyk8s://https://k8s.example:6443", "--deploy-mode", "cluster"]
    for key, value in {
        "spark.kubernetes.container.image": "spark:py",
        "spark.kubernetes.namespace": "team",
        **COMMON,
        **properties,
    }.items():
        argv += ["--conf", f"{key}={value}"]
    app = tmp / "main.py"
    app.write_text("print('main')\n")
    sub = build_submission(parse_submit_args([*argv, str(app), "arg1"]), {})
    master = kwargs.pop("master", IN_CLUSTER_MASTER)
    kwargs.setdefault("api_url", "https://k8s.example:6443")
    return plan_cluster(sub, master, names=NAMES, environ={}, **kwargs)


def _record(plan: ClusterPlan, tmp: Path) -> Any:
    metadata: dict[str, str] = {**POD["metadata"], "namespace": "team"}  # type: ignore[dict-item]
    pod = {**POD, "metadata": metadata}
    whole = {
        "pod": plan.pod,
        "claims": list(plan.claims),
        "service": plan.service(pod),
        "secret": plan.secret(pod),
        "config_map": plan.config_map(pod),
        "properties": plan.properties,
        "needs": [f"{p.verb} {p.resource}" for p in plan.needs],
    }
    text = json.dumps(whole, sort_keys=True, default=str).replace(str(tmp), "<TMP>")
    loaded = json.loads(text)
    loaded["pod"]["metadata"]["labels"][SPARK_VERSION_LABEL] = "<pyspark version>"
    return loaded


def _all(tmp: Path) -> dict[str, Any]:
    _files(tmp)
    return {name: _record(_plan(tmp, props, dict(kw)), tmp) for name, (props, kw) in _cases(tmp).items()}


@pytest.fixture(scope="module")
def actual(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _all(tmp_path_factory.mktemp("golden"))


def test_driver_pod_plans_match_the_recorded_golden(actual: dict[str, Any]) -> None:
    if os.environ.get("K8S_BACKEND_RECORD_GOLDEN"):
        GOLDEN.write_text(json.dumps(actual, indent=1, sort_keys=True) + "\n")
    expected = json.loads(GOLDEN.read_text())
    assert sorted(actual) == sorted(expected)
    for name in expected:
        assert actual[name] == expected[name], name


@pytest.mark.parametrize("name", ["basic", "template", "client_certs_mounted_family", "loopback_borrowed"])
def test_the_golden_cases_exercise_what_they_name(actual: dict[str, Any], name: str) -> None:
    """Guards the golden file itself against a case that silently stopped covering its feature."""
    plan = actual[name]
    containers = plan["pod"]["spec"]["containers"]
    if name == "template":
        assert [c["name"] for c in containers] == ["sidecar", "main"]
    elif name == "basic":
        assert plan["pod"]["spec"]["nodeSelector"] == {"disk": "ssd", "zone": "a"}
    else:
        assert plan["secret"] is not None and len(plan["secret"]["data"]) >= 3
