"""After a cluster-mode submission, the printed management commands work as printed, and a driver on
the submission's own loopback server gets the token the submission used, whatever gave it."""

from __future__ import annotations

import base64
import re
import shlex
from typing import Any

from cli_support import APPS, IMAGE, cli

from k8s_backend.cli.cluster_api import Connection
from k8s_backend.cli.errors import ApiEndpoint
from k8s_backend.kube.port import PODS, SECRETS
from k8s_backend.testing.fake import FakeKubernetes

NO_WAIT = ("--conf", "spark.kubernetes.submission.waitAppCompletion=false")
TOKEN_CONF = "spark.kubernetes.authenticate.submission.oauthToken=tok-123"


def printed_commands(err: str) -> list[list[str]]:
    return [shlex.split(c) for c in re.findall(r"`(k8s-backend [^`]+)`", err)]


def test_the_printed_status_and_kill_commands_work_as_printed() -> None:
    fake = FakeKubernetes()
    master = "pyk8s://https://k8s.test:6443"
    argv = ["submit", "--master", master, "--deploy-mode", "cluster", "--conf", IMAGE, "--conf", TOKEN_CONF]
    result = cli([*argv, *NO_WAIT, str(APPS / "pi.py")], fake)
    assert result.code == 0, result.err
    status, kill = printed_commands(result.err)
    assert status[:4] == ["k8s-backend", "status", "--master", master]
    # The credentials the submission used, the token's value left out of the terminal.
    placeholder = "spark.kubernetes.authenticate.submission.oauthToken=<the token you passed>"
    assert status[4:6] == ["--conf", placeholder]
    assert "tok-123" not in result.err
    status[5] = TOKEN_CONF  # as the user runs it, with their token
    shown = cli(status[1:], fake)
    assert shown.code == 0, shown.err
    assert "driver:         Pending" in shown.out
    assert cli([*kill[1:], "--no-wait"], fake).code == 0
    assert fake.objects(PODS) == [] or all(p["metadata"].get("deletionTimestamp") for p in fake.objects(PODS))


def test_the_default_master_needs_no_master_in_the_command() -> None:
    fake = FakeKubernetes()
    argv = ["submit", "--deploy-mode", "cluster", "--conf", IMAGE, *NO_WAIT, str(APPS / "pi.py")]
    result = cli(argv, fake)
    assert result.code == 0, result.err
    status, _ = printed_commands(result.err)
    assert "--master" not in status and "--conf" not in status


def test_a_driver_on_the_loopback_server_gets_the_token_the_kubeconfig_gave_the_submission() -> None:
    fake = FakeKubernetes()

    def connect(conf: Any, namespace: str) -> Connection:
        endpoint = ApiEndpoint("http://127.0.0.1:40123", "kubeconfig /home/me/.kube/config (current context)")
        return Connection(fake, endpoint, token="from-kubeconfig")

    argv = ["submit", "--deploy-mode", "cluster", "--conf", IMAGE, *NO_WAIT, str(APPS / "pi.py")]
    result = cli(argv, connect=connect)
    assert result.code == 0, result.err
    [secret] = fake.objects(SECRETS)
    assert base64.b64decode(secret["data"]["token"]).decode() == "from-kubeconfig"
    [pod] = fake.objects(PODS)
    args = pod["spec"]["containers"][0]["args"]
    assert "spark.kubernetes.authenticate.oauthTokenFile=$(K8S_BACKEND_API_TOKEN_FILE)" in args
