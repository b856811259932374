"""``--kubeconfig`` and ``--context`` on every command that reaches a cluster, as kubectl's: they pick the
file and context the client loads (``spark.kubernetes.kubeconfig`` / ``spark.kubernetes.context``), and
never travel into a cluster-mode driver's properties."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cli_support import APPS, ENDPOINT, IMAGE, cli

from k8s_backend.cli.common.cluster_api import Connection
from k8s_backend.cli.common.properties import parse_properties
from k8s_backend.conf.model import ApiClientConf
from k8s_backend.errors import ConfigError
from k8s_backend.kube.config import build_client_settings
from k8s_backend.kube.port import CONFIG_MAPS
from k8s_backend.testing import FakeKubernetes


def kubeconfig(path: Path, contexts: dict[str, str], current: str) -> Path:
    """contexts: name -> server (each with token ``tok-<name>``)."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": current,
        "clusters": [{"name": n, "cluster": {"server": s}} for n, s in contexts.items()],
        "users": [{"name": n, "user": {"token": f"tok-{n}"}} for n in contexts],
        "contexts": [{"name": n, "context": {"cluster": n, "user": n}} for n in contexts],
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def test_an_explicit_kubeconfig_wins_over_the_environment(tmp_path: Path) -> None:
    mine = kubeconfig(tmp_path / "mine", {"a": "https://a.test:6443", "b": "https://b.test:6443"}, "a")
    other = kubeconfig(tmp_path / "other", {"x": "https://x.test:6443"}, "x")
    env = {"KUBECONFIG": str(other), "HOME": str(tmp_path)}
    settings = build_client_settings(ApiClientConf(kubeconfig=str(mine), context="b"), environ=env)
    assert settings.host == "https://b.test:6443"
    assert settings.configuration.api_key["BearerToken"].endswith("tok-b")


def test_a_missing_kubeconfig_names_the_key() -> None:
    with pytest.raises(ConfigError, match=r"spark\.kubernetes\.kubeconfig='/no/such' does not exist") as info:
        build_client_settings(ApiClientConf(kubeconfig="/no/such"), environ={"HOME": "/nonexistent"})
    assert info.value.key == "spark.kubernetes.kubeconfig"


COMMANDS = [["status", "x"], ["list"], ["kill", "x"], ["gc"], ["logs", "x"], ["events", "x"]]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_cluster_command_takes_kubeconfig_and_context(command: list[str]) -> None:
    seen: list[ApiClientConf] = []

    def connect(conf: ApiClientConf, namespace: str) -> Connection:
        seen.append(conf)
        return Connection(FakeKubernetes(), ENDPOINT)

    cli([*command, "--kubeconfig", "/tmp/kc", "--context", "prod"], connect=connect)
    assert [(c.kubeconfig, c.context) for c in seen] == [("/tmp/kc", "prod")]


def test_submit_takes_them_and_keeps_them_out_of_the_drivers_properties() -> None:
    fake = FakeKubernetes()
    seen: list[ApiClientConf] = []

    def connect(conf: ApiClientConf, namespace: str) -> Connection:
        seen.append(conf)
        return Connection(fake, ENDPOINT)

    argv = ["submit", "--deploy-mode", "cluster", "--kubeconfig", "/tmp/kc", "--context", "prod"]
    argv += ["--conf", IMAGE, "--conf", "spark.kubernetes.submission.waitAppCompletion=false"]
    result = cli([*argv, str(APPS / "pi.py")], connect=connect)
    assert result.code == 0, result.err
    assert [(c.kubeconfig, c.context) for c in seen] == [("/tmp/kc", "prod")]
    [config_map] = fake.objects(CONFIG_MAPS)
    driver_properties = parse_properties(config_map["data"]["spark.properties"])
    assert "spark.kubernetes.kubeconfig" not in driver_properties
    assert "spark.kubernetes.context" not in driver_properties
