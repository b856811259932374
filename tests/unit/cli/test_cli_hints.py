"""After a cluster-mode submission, the printed management commands work as printed, and a driver on
the submission's own loopback server gets the token the submission used, whatever gave it."""

from __future__ import annotations

import base64
import re
import shlex
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_support import APPS, IMAGE, cli

from k8s_backend.cli.common.cluster_api import Connection, bearer_token
from k8s_backend.cli.common.errors import ApiEndpoint, UsageError
from k8s_backend.conf.model import ApiClientConf
from k8s_backend.errors import ConfigError
from k8s_backend.kube.config import build_client_settings
from k8s_backend.kube.port import PODS, SECRETS
from k8s_backend.testing import FakeKubernetes

NO_WAIT = ("--conf", "spark.kubernetes.submission.waitAppCompletion=false")
TOKEN_CONF = "spark.kubernetes.authenticate.submission.oauthToken=tok-123"


def printed_commands(err: str) -> list[list[str]]:
    return [shlex.split(c) for c in re.findall(r"`(k8s-backend [^`]+)`", err)]


def checking_connector(fake: FakeKubernetes, home: Path, token: str) -> Any:
    """A connector that resolves the command's credentials as the real one does (kubeconfig, token
    file...) and refuses, as the server would, unless they give ``token``."""

    def connect(conf: ApiClientConf, namespace: str) -> Connection:
        try:
            settings = build_client_settings(conf, environ={"HOME": str(home)})
        except ConfigError as error:
            raise UsageError(str(error)) from None
        sent = bearer_token(settings.configuration)
        if sent != token:
            raise UsageError(f"401 Unauthorized: sent {sent!r}")
        return Connection(fake, ApiEndpoint(settings.host, settings.source), token=sent)

    return connect


def run_printed(command: list[str], fake: FakeKubernetes, connect: Any) -> Any:
    assert command[0] == "k8s-backend"
    return cli(command[1:], fake, connect=connect)


def test_the_printed_status_and_kill_commands_work_as_printed(tmp_path: Path) -> None:
    fake = FakeKubernetes()
    connect = checking_connector(fake, tmp_path / "home", "tok-123")
    environ = {"K8S_BACKEND_CACHE_DIR": str(tmp_path / "cache")}
    master = "pyk8s://https://k8s.test:6443"
    argv = ["submit", "--master", master, "--deploy-mode", "cluster", "--conf", IMAGE, "--conf", TOKEN_CONF]
    result = cli([*argv, *NO_WAIT, str(APPS / "pi.py")], connect=connect, api=fake, environ=environ)
    assert result.code == 0, result.err
    status, kill = printed_commands(result.err)
    assert status[:4] == ["k8s-backend", "status", "--master", master]
    # The token the submission used, from a file only this user reads: its value is not in the terminal.
    assert "tok-123" not in result.err
    key, path = status[5].split("=", 1)
    assert key == "spark.kubernetes.authenticate.submission.oauthTokenFile"
    assert Path(path).parent == tmp_path / "cache" / "tokens"
    assert Path(path).read_text() == "tok-123"
    assert stat.S_IMODE(Path(path).stat().st_mode) == 0o600
    assert stat.S_IMODE(Path(path).parent.stat().st_mode) == 0o700
    shown = run_printed(status, fake, connect)  # verbatim
    assert shown.code == 0, shown.err
    assert "driver:         Pending" in shown.out
    assert run_printed([*kill, "--no-wait"], fake, connect).code == 0
    assert fake.objects(PODS) == [] or all(p["metadata"].get("deletionTimestamp") for p in fake.objects(PODS))


def test_the_printed_commands_name_the_kubeconfig_and_context_the_submission_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeKubernetes()
    contexts = [
        {"name": name, "context": {"cluster": "c", "user": name}} for name in ("other", "spark")
    ]
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:40123"}}],
        "users": [{"name": n, "user": {"token": t}} for n, t in (("other", "wrong"), ("spark", "kc-tok"))],
        "contexts": contexts,
        "current-context": "other",
    }
    (tmp_path / "kc.yaml").write_text(yaml.safe_dump(kubeconfig))
    monkeypatch.chdir(tmp_path)  # a relative --kubeconfig, printed as an absolute path
    connect = checking_connector(fake, tmp_path / "home", "kc-tok")
    argv = ["submit", "--kubeconfig", "kc.yaml", "--context", "spark", "--deploy-mode", "cluster"]
    result = cli([*argv, "--conf", IMAGE, *NO_WAIT, str(APPS / "pi.py")], fake, connect=connect)
    assert result.code == 0, result.err
    status, kill = printed_commands(result.err)
    assert status[2:6] == ["--kubeconfig", str(tmp_path / "kc.yaml"), "--context", "spark"]
    monkeypatch.chdir(tmp_path / "..")
    shown = run_printed(status, fake, connect)
    assert shown.code == 0, shown.err
    assert run_printed([*kill, "--no-wait"], fake, connect).code == 0


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
