"""Cluster mode ships the files ``spark.kubernetes.authenticate.driver.*`` names on the submitting machine,
as Spark's DriverKubernetesCredentialsFeatureStep does: read at submit time, carried in the driver's
Secret, mounted into the driver container and named by ``spark.kubernetes.authenticate.driver.mounted.*``
in the driver's properties. Never in the ConfigMap or the pod spec."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import APPS, IMAGE, cli

from k8s_backend.cli.common.cluster_api import submission_api_conf
from k8s_backend.cli.common.properties import parse_properties
from k8s_backend.cli.common.submit_args import parse_submit_args
from k8s_backend.cli.submit.cluster_mode import plan_cluster
from k8s_backend.cli.submit.submission import Submission, build_submission
from k8s_backend.kube.port import CONFIG_MAPS, PODS, SECRETS, SERVICES
from k8s_backend.testing import FakeKubernetes

DRIVER = "spark.kubernetes.authenticate.driver."
MOUNTED = "spark.kubernetes.authenticate.driver.mounted."
MOUNT = "/opt/spark/secrets/k8s-token"
CA = b"-----BEGIN CERTIFICATE-----\nDRIVERCA\n-----END CERTIFICATE-----\n"
CERT = b"-----BEGIN CERTIFICATE-----\nDRIVERCERT\n-----END CERTIFICATE-----\n"
KEY = b"-----BEGIN PRIVATE KEY-----\nDRIVERKEY\n-----END PRIVATE KEY-----\n"
TOKEN = b"driver-token-from-a-file\n"
NO_WAIT = ("--conf", "spark.kubernetes.submission.waitAppCompletion=false")
ITEMS = {
    "caCertFile": ("driver-ca.crt", CA, "K8S_BACKEND_DRIVER_CA_FILE"),
    "clientCertFile": ("driver-client.crt", CERT, "K8S_BACKEND_DRIVER_CLIENT_CERT_FILE"),
    "clientKeyFile": ("driver-client.key", KEY, "K8S_BACKEND_DRIVER_CLIENT_KEY_FILE"),
    "oauthTokenFile": ("driver-oauth-token", TOKEN, "K8S_BACKEND_DRIVER_TOKEN_FILE"),
}
SECRET_TEXTS = ("DRIVERCA", "DRIVERCERT", "DRIVERKEY", "driver-token-from-a-file", "VALUE-TOKEN")


def write_files(directory: Path, *suffixes: str) -> list[str]:
    """``--conf`` arguments naming a local file for each of ``suffixes``."""
    argv: list[str] = []
    for suffix in suffixes:
        item, content, _ = ITEMS[suffix]
        (directory / item).write_bytes(content)
        argv += ["--conf", f"{DRIVER}{suffix}={directory / item}"]
    return argv


def submit(*extra: str, api: FakeKubernetes | None = None) -> tuple[Any, FakeKubernetes]:
    fake = api or FakeKubernetes()
    argv = ["submit", "--deploy-mode", "cluster", "--conf", IMAGE, *NO_WAIT, *extra, str(APPS / "pi.py")]
    return cli(argv, fake), fake


def decoded(secret: dict[str, Any]) -> dict[str, bytes]:
    return {k: base64.b64decode(v) for k, v in secret["data"].items()}


def test_driver_credential_files_travel_in_the_secret_and_the_driver_reads_the_mounted_copies(
    tmp_path: Path,
) -> None:
    result, fake = submit(*write_files(tmp_path, *ITEMS))
    assert result.code == 0, result.err
    [secret] = fake.objects(SECRETS)
    [pod] = fake.objects(PODS)
    [config_map] = fake.objects(CONFIG_MAPS)
    assert decoded(secret) == {item: content for item, content, _ in ITEMS.values()}
    assert secret["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]  # deleted with it
    props = parse_properties(config_map["data"]["spark.properties"])
    container = pod["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    for suffix, (item, _, variable) in ITEMS.items():
        assert props[MOUNTED + suffix] == f"{MOUNT}/{item}"
        assert env[variable] == f"{MOUNT}/{item}"
        # A kubelet running the "pod" on this host (a local cluster) substitutes the file's local path.
        assert f"{MOUNTED}{suffix}=$({variable})" in container["args"]
        assert DRIVER + suffix not in props  # the submitting machine's path means nothing in the pod
    [volume] = [v for v in pod["spec"]["volumes"] if v["name"] == "k8s-backend-api-token"]
    assert volume["secret"]["secretName"] == secret["metadata"]["name"]
    assert sorted(i["key"] for i in volume["secret"]["items"]) == sorted(i for i, _, _ in ITEMS.values())
    [mount] = [m for m in container["volumeMounts"] if m["name"] == "k8s-backend-api-token"]
    assert mount == {"name": "k8s-backend-api-token", "mountPath": MOUNT, "readOnly": True}
    text = json.dumps([pod, config_map, fake.objects(SERVICES)])
    assert not [s for s in SECRET_TEXTS if s in text]
    assert str(tmp_path) not in text  # no local path either


def test_a_token_value_joins_the_mounted_family_of_the_shipped_files(tmp_path: Path) -> None:
    sub = submission(*write_files(tmp_path, "caCertFile"), "--conf", f"{DRIVER}oauthToken=VALUE-TOKEN")
    p = plan_cluster(sub, "pyk8s://https://kubernetes.default.svc", api_url="https://k8s.test", environ={})
    secret = p.secret({"metadata": {"name": "d", "uid": "u"}})
    assert secret is not None and decoded(secret) == {"token": b"VALUE-TOKEN", "driver-ca.crt": CA}
    assert p.properties[MOUNTED + "oauthTokenFile"] == f"{MOUNT}/token"
    assert p.properties[MOUNTED + "caCertFile"] == f"{MOUNT}/driver-ca.crt"
    assert not [k for k in p.properties if k.startswith(DRIVER) and not k.startswith(MOUNTED)]
    assert "VALUE-TOKEN" not in json.dumps([p.pod, p.data, p.binary])


def test_mounted_keys_the_user_gives_pass_through_untouched_and_win(tmp_path: Path) -> None:
    # The driver.* CA is replaced by the user's mounted one: not read (it may not even exist here).
    result, fake = submit(
        *write_files(tmp_path, "clientKeyFile", "clientCertFile"),
        "--conf",
        f"{DRIVER}caCertFile={tmp_path / 'absent.crt'}",
        "--conf",
        f"{MOUNTED}caCertFile=/etc/in-pod/ca.crt",
        "--conf",
        f"{MOUNTED}oauthTokenFile=/var/run/token",
    )
    assert result.code == 0, result.err
    [secret] = fake.objects(SECRETS)
    assert decoded(secret) == {"driver-client.crt": CERT, "driver-client.key": KEY}
    [config_map] = fake.objects(CONFIG_MAPS)
    props = parse_properties(config_map["data"]["spark.properties"])
    assert props[MOUNTED + "caCertFile"] == "/etc/in-pod/ca.crt"
    assert props[MOUNTED + "oauthTokenFile"] == "/var/run/token"
    assert props[MOUNTED + "clientKeyFile"] == f"{MOUNT}/driver-client.key"
    assert DRIVER + "caCertFile" not in props
    # Only mounted.* given: nothing to ship, nothing to rewrite.
    result, fake = submit("--conf", f"{MOUNTED}caCertFile=/etc/in-pod/ca.crt")
    assert result.code == 0, result.err
    assert fake.objects(SECRETS) == []
    [config_map] = fake.objects(CONFIG_MAPS)
    assert parse_properties(config_map["data"]["spark.properties"])[MOUNTED + "caCertFile"] == (
        "/etc/in-pod/ca.crt"
    )


@pytest.mark.parametrize("problem", ["missing", "directory"])
def test_an_unreadable_driver_file_is_one_line_and_creates_nothing(tmp_path: Path, problem: str) -> None:
    path = tmp_path / "ca.crt"
    if problem == "directory":
        path.mkdir()
    result, fake = submit(*write_files(tmp_path, "clientKeyFile"), "--conf", f"{DRIVER}caCertFile={path}")
    assert result.code == 2
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert f"{DRIVER}caCertFile={path}" in lines[0]
    assert "Traceback" not in result.err
    assert fake.calls == []  # found before reaching the cluster


def test_a_loopback_driver_keeps_the_submissions_token_beside_its_own_ca(tmp_path: Path) -> None:
    loopback = "https://127.0.0.1:5"
    sub = submission(*write_files(tmp_path, "caCertFile"), master="pyk8s://" + loopback)
    p = plan_cluster(
        sub,
        "pyk8s://" + loopback,
        api_url=loopback,
        environ={},
        submission_token="kubeconfig-token",
        submission_files={"caCertFile": b"KUBECONFIG CA"},
    )
    secret = p.secret({"metadata": {"name": "d", "uid": "u"}})
    # The user's CA wins over the kubeconfig's; the token joins the family the driver reads.
    assert secret is not None and decoded(secret) == {"token": b"kubeconfig-token", "driver-ca.crt": CA}
    assert p.properties[MOUNTED + "caCertFile"] == f"{MOUNT}/driver-ca.crt"
    assert p.properties[MOUNTED + "oauthTokenFile"] == f"{MOUNT}/token"
    assert not [k for k in p.properties if k.startswith("spark.kubernetes.authenticate.ca")]


def test_a_token_given_both_ways_is_refused(tmp_path: Path) -> None:
    result, fake = submit(*write_files(tmp_path, "oauthTokenFile"), "--conf", f"{DRIVER}oauthToken=x")
    assert result.code == 2
    assert f"{DRIVER}oauthTokenFile" in result.err and f"{DRIVER}oauthToken" in result.err
    assert fake.calls == []


def test_a_failed_creation_deletes_the_credentials_secret(tmp_path: Path) -> None:
    fake = FakeKubernetes()
    fake.fail_next("create", CONFIG_MAPS, status=500)
    result, _ = submit(*write_files(tmp_path, "caCertFile"), api=fake)
    assert result.code != 0
    assert [c for c in fake.calls if c.verb == "create" and c.resource_plural == "secrets"]
    assert fake.objects(SECRETS) == [] and fake.objects(PODS) == []


def test_the_submission_never_uses_the_drivers_credentials(tmp_path: Path) -> None:
    # As in Spark: driver[.mounted].* are for the driver (a mounted path does not exist on this machine).
    props = {
        "spark.master": "k8s://https://k8s.test:6443",
        f"{MOUNTED}caCertFile": "/etc/in-pod/ca.crt",
        f"{DRIVER}oauthToken": "driver-only",
        f"{DRIVER}clientKeyFile": "/local/driver.key",
    }
    assert submission_api_conf(props) == submission_api_conf({"spark.master": props["spark.master"]})
    own = {**props, "spark.kubernetes.authenticate.oauthTokenFile": "/local/token"}
    assert submission_api_conf(own).oauth_token_file == "/local/token"


def submission(*extra: str, master: str = "k8s://https://k8s.test:6443") -> Submission:
    argv = ["--master", master, "--deploy-mode", "cluster", "--conf", IMAGE, *extra]
    return build_submission(parse_submit_args([*argv, str(APPS / "pi.py")]), {})
