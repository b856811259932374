"""A cluster-mode driver on the submission's own loopback server gets every credential the submission's
client used, however the user gave them: the token, and the CA, client certificate and key a kubeconfig
holds (as files or ``*-data``) travel in the driver's Secret and are mounted into its container."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_support import APPS, IMAGE, cli

from k8s_backend.cli.common.cluster_api import Connection, official_connector
from k8s_backend.cli.common.errors import ApiEndpoint
from k8s_backend.cli.common.submit_args import parse_submit_args
from k8s_backend.cli.submit.cluster_mode import ClusterPlan, plan_cluster
from k8s_backend.cli.submit.submission import Submission, build_submission
from k8s_backend.conf.model import ApiClientConf
from k8s_backend.kube.masters import IN_CLUSTER_MASTER
from k8s_backend.kube.port import PODS, SECRETS
from k8s_backend.testing import FakeKubernetes

LOOPBACK = "https://127.0.0.1:5"
MOUNT = "/opt/spark/secrets/k8s-token"
CA = b"-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"
CERT = b"-----BEGIN CERTIFICATE-----\nME\n-----END CERTIFICATE-----\n"
KEY = b"-----BEGIN PRIVATE KEY-----\nSECRETKEY\n-----END PRIVATE KEY-----\n"
NO_WAIT = ("--conf", "spark.kubernetes.submission.waitAppCompletion=false")


def submission(*extra: str) -> Submission:
    argv = ["--master", "pyk8s://" + LOOPBACK, "--deploy-mode", "cluster", "--conf", IMAGE, *extra]
    return build_submission(parse_submit_args([*argv, str(APPS / "pi.py")]), {})


def loopback_plan(sub: Submission, files: dict[str, bytes], token: str | None = "tok") -> ClusterPlan:
    master = "pyk8s://" + LOOPBACK
    return plan_cluster(
        sub, master, api_url=LOOPBACK, environ={}, submission_token=token, submission_files=files
    )


def secret_data(p: ClusterPlan) -> dict[str, bytes]:
    secret = p.secret({"metadata": {"name": "d", "uid": "u"}})
    assert secret is not None
    return {k: base64.b64decode(v) for k, v in secret["data"].items()}


def test_a_kubeconfigs_ca_reaches_the_driver_as_a_mounted_file() -> None:
    p = loopback_plan(submission(), {"caCertFile": CA})
    assert secret_data(p) == {"token": b"tok", "ca.crt": CA}
    assert p.properties["spark.kubernetes.authenticate.caCertFile"] == f"{MOUNT}/ca.crt"
    [container] = p.pod["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["K8S_BACKEND_API_CA_FILE"] == f"{MOUNT}/ca.crt"
    # A kubelet running the "pod" on this host substitutes the file's local path for the variable.
    assert "spark.kubernetes.authenticate.caCertFile=$(K8S_BACKEND_API_CA_FILE)" in container["args"]
    [volume] = [v for v in p.pod["spec"]["volumes"] if v["name"] == "k8s-backend-api-token"]
    assert [item["key"] for item in volume["secret"]["items"]] == ["token", "ca.crt"]
    assert "CA\n" not in str(p.data)  # not in the ConfigMap


def test_a_kubeconfigs_client_certificate_and_key_reach_the_driver_in_the_secret_only() -> None:
    files = {"caCertFile": CA, "clientCertFile": CERT, "clientKeyFile": KEY}
    p = loopback_plan(submission(), files, token=None)
    assert secret_data(p) == {"ca.crt": CA, "client.crt": CERT, "client.key": KEY}
    for suffix, name in (("clientCertFile", "client.crt"), ("clientKeyFile", "client.key")):
        assert p.properties[f"spark.kubernetes.authenticate.{suffix}"] == f"{MOUNT}/{name}"
    args = p.pod["spec"]["containers"][0]["args"]
    assert "spark.kubernetes.authenticate.clientKeyFile=$(K8S_BACKEND_API_CLIENT_KEY_FILE)" in args
    assert "SECRETKEY" not in str([p.pod, p.data, p.properties, repr(p)])
    assert "create secrets" in [str(need) for need in p.needs]


def test_credentials_given_as_properties_win_and_travel_by_path() -> None:
    sub = submission("--conf", "spark.kubernetes.authenticate.submission.caCertFile=/etc/my-ca.crt")
    p = loopback_plan(sub, {"caCertFile": CA})
    assert p.properties["spark.kubernetes.authenticate.caCertFile"] == "/etc/my-ca.crt"
    assert "ca.crt" not in secret_data(p)
    own = submission("--conf", "spark.kubernetes.authenticate.oauthTokenFile=/driver/token")
    assert loopback_plan(own, {"caCertFile": CA}).secret({"metadata": {"uid": "u"}}) is None


def test_a_driver_on_another_server_gets_none_of_the_submissions_files() -> None:
    p = plan_cluster(
        submission(), IN_CLUSTER_MASTER, api_url=LOOPBACK, environ={}, submission_files={"caCertFile": CA}
    )
    assert p.secret({"metadata": {"uid": "u"}}) is None
    assert "spark.kubernetes.authenticate.caCertFile" not in p.properties


def test_submit_ships_the_ca_its_connection_used() -> None:
    fake = FakeKubernetes()

    def connect(conf: Any, namespace: str) -> Connection:
        endpoint = ApiEndpoint("http://127.0.0.1:40123", "kubeconfig kc.yaml (current context)")
        return Connection(fake, endpoint, token="from-kubeconfig", files={"caCertFile": CA})

    argv = ["submit", "--deploy-mode", "cluster", "--conf", IMAGE, *NO_WAIT, str(APPS / "pi.py")]
    result = cli(argv, connect=connect)
    assert result.code == 0, result.err
    [secret] = fake.objects(SECRETS)
    assert base64.b64decode(secret["data"]["ca.crt"]) == CA
    [pod] = fake.objects(PODS)
    args = pod["spec"]["containers"][0]["args"]
    assert "spark.kubernetes.authenticate.caCertFile=$(K8S_BACKEND_API_CA_FILE)" in args


@pytest.mark.parametrize("inline", [True, False])
def test_the_official_client_settings_give_the_kubeconfigs_files(tmp_path: Path, inline: bool) -> None:
    (tmp_path / "ca.pem").write_bytes(CA)
    cluster: dict[str, Any] = {"server": "https://127.0.0.1:6443"}
    user: dict[str, Any] = {"token": "kc-tok"}
    if inline:
        cluster["certificate-authority-data"] = base64.b64encode(CA).decode()
        user["client-certificate-data"] = base64.b64encode(CERT).decode()
        user["client-key-data"] = base64.b64encode(KEY).decode()
    else:
        (tmp_path / "me.crt").write_bytes(CERT)
        (tmp_path / "me.key").write_bytes(KEY)
        cluster["certificate-authority"] = "ca.pem"  # relative to the kubeconfig's directory
        user["client-certificate"] = str(tmp_path / "me.crt")
        user["client-key"] = str(tmp_path / "me.key")
    kubeconfig = write_kubeconfig(tmp_path, cluster, user)
    connection = official_connector(environ={})(ApiClientConf(kubeconfig=str(kubeconfig)), "default")
    connection.api.close()
    assert connection.files == {"caCertFile": CA, "clientCertFile": CERT, "clientKeyFile": KEY}
    # The loader stores "Bearer kc-tok": the driver gets the token itself.
    assert connection.token == "kc-tok"
    assert connection.verify_tls


def test_a_kubeconfig_that_skips_tls_verification_says_so(tmp_path: Path) -> None:
    cluster = {"server": "https://127.0.0.1:6443", "insecure-skip-tls-verify": True}
    kubeconfig = write_kubeconfig(tmp_path, cluster, {"token": "t"})
    connection = official_connector(environ={})(ApiClientConf(kubeconfig=str(kubeconfig)), "default")
    connection.api.close()
    assert not connection.verify_tls and connection.files == {} and connection.token == "t"


def write_kubeconfig(directory: Path, cluster: dict[str, Any], user: dict[str, Any]) -> Path:
    kubeconfig = directory / "kc.yaml"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": cluster}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return kubeconfig


def test_a_submission_that_skips_tls_verification_has_its_driver_skip_it_too() -> None:
    p = plan_cluster(
        submission(), "pyk8s://" + LOOPBACK, api_url=LOOPBACK, environ={}, submission_verifies_tls=False
    )
    assert p.properties["spark.kubernetes.trust.certificates"] == "true"
    assert "spark.kubernetes.trust.certificates" not in loopback_plan(submission(), {}).properties
    chosen = submission("--conf", "spark.kubernetes.trust.certificates=false")
    kept = plan_cluster(
        chosen, "pyk8s://" + LOOPBACK, api_url=LOOPBACK, environ={}, submission_verifies_tls=False
    )
    assert kept.properties["spark.kubernetes.trust.certificates"] == "false"  # the user's own choice
    elsewhere = plan_cluster(
        submission(), IN_CLUSTER_MASTER, api_url=LOOPBACK, environ={}, submission_verifies_tls=False
    )
    assert "spark.kubernetes.trust.certificates" not in elsewhere.properties
