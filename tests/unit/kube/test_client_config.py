"""Building the official client's configuration from ApiClientConf."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from k8s_backend.conf.model import ApiClientConf
from k8s_backend.errors import ConfigError
from k8s_backend.kube.client import OfficialKubernetesApi
from k8s_backend.kube.config import build_client_settings, normalize_master
from k8s_backend.kube.port import KubernetesApi


def auth_header(configuration: Any) -> str | None:
    settings = configuration.auth_settings()
    return settings["BearerToken"]["value"] if "BearerToken" in settings else None


def empty_env(tmp_path: Path) -> dict[str, str]:
    """An environment with no kubeconfig and not in a pod (the machine's own never leaks in)."""
    return {"HOME": str(tmp_path / "home")}


def write_kubeconfig(path: Path, *, contexts: dict[str, tuple[str, str]], current: str) -> None:
    """contexts: name -> (server, token)."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": current,
        "clusters": [{"name": f"c-{n}", "cluster": {"server": s}} for n, (s, _) in contexts.items()],
        "users": [{"name": f"u-{n}", "user": {"token": t}} for n, (_, t) in contexts.items()],
        "contexts": [{"name": n, "context": {"cluster": f"c-{n}", "user": f"u-{n}"}} for n in contexts],
    }
    path.write_text(yaml.safe_dump(doc))


@pytest.mark.parametrize(
    ("master", "url"),
    [
        ("k8s://https://host:6443", "https://host:6443"),
        ("https://host:6443/", "https://host:6443"),
        ("k8s://host:6443", "https://host:6443"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ],
)
def test_master_urls_are_normalized(master: str, url: str) -> None:
    assert normalize_master(master) == url


@pytest.mark.parametrize("master", ["k8s://ftp://host", "k8s://", "https://"])
def test_bad_master_names_the_key_and_value(master: str) -> None:
    with pytest.raises(ConfigError, match=r"spark\.master") as info:
        normalize_master(master)
    assert info.value.value == master


def test_explicit_url_and_token(tmp_path: Path) -> None:
    api = ApiClientConf(master="k8s://https://host:6443", oauth_token="s3cret")
    settings = build_client_settings(api, environ=empty_env(tmp_path))
    cfg = settings.configuration
    assert cfg.host == "https://host:6443"
    assert auth_header(cfg) == "Bearer s3cret"
    assert cfg.verify_ssl is True
    assert cfg.retries is False  # our retry policy, not urllib3's
    assert "spark.master https://host:6443" in settings.source


def test_token_file_is_read_and_re_read_when_it_changes(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    api = ApiClientConf(master="https://host:6443", oauth_token_file=str(token))
    cfg = build_client_settings(api, environ=empty_env(tmp_path)).configuration
    assert auth_header(cfg) == "Bearer first"
    token.write_text("second")
    os.utime(token, (1, 1))  # a different mtime, whatever the file system's resolution
    assert auth_header(cfg) == "Bearer second"


def test_missing_token_file_is_a_config_error(tmp_path: Path) -> None:
    api = ApiClientConf(master="https://host:6443", oauth_token_file=str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match="oauthTokenFile") as info:
        build_client_settings(api, environ=empty_env(tmp_path))
    assert info.value.key == "spark.kubernetes.authenticate.oauthTokenFile"


def test_empty_token_file_is_a_config_error(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("  \n")
    api = ApiClientConf(master="https://host:6443", oauth_token_file=str(token))
    with pytest.raises(ConfigError, match="empty"):
        build_client_settings(api, environ=empty_env(tmp_path))


def test_trust_certificates_turns_verification_off(tmp_path: Path) -> None:
    api = ApiClientConf(master="https://host:6443", trust_certificates=True)
    settings = build_client_settings(api, environ=empty_env(tmp_path))
    assert settings.configuration.verify_ssl is False
    assert "TLS verification off" in settings.source


def test_ca_and_client_certificate_files(tmp_path: Path) -> None:
    for name in ("ca.crt", "client.crt", "client.key"):
        (tmp_path / name).write_text("x")
    api = ApiClientConf(
        master="https://host:6443",
        ca_cert_file=str(tmp_path / "ca.crt"),
        client_cert_file=str(tmp_path / "client.crt"),
        client_key_file=str(tmp_path / "client.key"),
    )
    cfg = build_client_settings(api, environ=empty_env(tmp_path)).configuration
    assert cfg.ssl_ca_cert == str(tmp_path / "ca.crt")
    assert (cfg.cert_file, cfg.key_file) == (str(tmp_path / "client.crt"), str(tmp_path / "client.key"))


def test_missing_ca_file_names_the_key(tmp_path: Path) -> None:
    api = ApiClientConf(master="https://host:6443", ca_cert_file=str(tmp_path / "none.crt"))
    with pytest.raises(ConfigError, match="caCertFile"):
        build_client_settings(api, environ=empty_env(tmp_path))


def test_client_certificate_without_key_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "client.crt").write_text("x")
    api = ApiClientConf(master="https://host:6443", client_cert_file=str(tmp_path / "client.crt"))
    with pytest.raises(ConfigError, match="clientKeyFile"):
        build_client_settings(api, environ=empty_env(tmp_path))


def test_kubeconfig_current_context(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(
        kubeconfig, contexts={"a": ("https://a:6443", "ta"), "b": ("https://b:6443", "tb")}, current="a"
    )
    env = {"KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)}
    settings = build_client_settings(ApiClientConf(), environ=env)
    assert settings.configuration.host == "https://a:6443"
    assert auth_header(settings.configuration) == "Bearer ta"
    assert str(kubeconfig) in settings.source


def test_kubeconfig_named_context_and_default_location(tmp_path: Path) -> None:
    (tmp_path / ".kube").mkdir()
    write_kubeconfig(
        tmp_path / ".kube" / "config",
        contexts={"a": ("https://a:6443", "ta"), "b": ("https://b:6443", "tb")},
        current="a",
    )
    settings = build_client_settings(ApiClientConf(context="b"), environ={"HOME": str(tmp_path)})
    assert settings.configuration.host == "https://b:6443"
    assert auth_header(settings.configuration) == "Bearer tb"
    assert "context 'b'" in settings.source


def test_unknown_context_is_a_config_error(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, contexts={"a": ("https://a:6443", "ta")}, current="a")
    with pytest.raises(ConfigError, match=r"spark\.kubernetes\.context"):
        build_client_settings(ApiClientConf(context="zzz"), environ={"KUBECONFIG": str(kubeconfig)})


def test_context_without_kubeconfig_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no kubeconfig"):
        build_client_settings(ApiClientConf(context="b"), environ=empty_env(tmp_path))


def test_explicit_master_borrows_kubeconfig_credentials_only_for_the_same_server(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, contexts={"a": ("https://a:6443", "ta")}, current="a")
    env = {"KUBECONFIG": str(kubeconfig)}
    same = build_client_settings(ApiClientConf(master="k8s://https://a:6443"), environ=env).configuration
    assert auth_header(same) == "Bearer ta"
    other = build_client_settings(ApiClientConf(master="k8s://https://evil:6443"), environ=env).configuration
    assert other.host == "https://evil:6443"
    assert auth_header(other) is None


def in_cluster(tmp_path: Path) -> tuple[dict[str, str], str]:
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("podtoken")
    (sa / "ca.crt").write_text("cert")
    env = {
        "HOME": str(tmp_path / "home"),
        "KUBERNETES_SERVICE_HOST": "10.0.0.1",
        "KUBERNETES_SERVICE_PORT": "443",
    }
    return env, str(sa)


def test_in_cluster_service_account(tmp_path: Path) -> None:
    env, sa = in_cluster(tmp_path)
    settings = build_client_settings(ApiClientConf(), environ=env, service_account_dir=sa)
    cfg = settings.configuration
    assert cfg.host == "https://10.0.0.1:443"
    assert cfg.ssl_ca_cert == os.path.join(sa, "ca.crt")
    assert auth_header(cfg) == "bearer podtoken"
    assert "service account" in settings.source


def test_explicit_master_in_a_pod_uses_the_service_account_token(tmp_path: Path) -> None:
    env, sa = in_cluster(tmp_path)
    api = ApiClientConf(master="k8s://https://kubernetes.default.svc")
    cfg = build_client_settings(api, environ=env, service_account_dir=sa).configuration
    assert cfg.host == "https://kubernetes.default.svc"
    assert auth_header(cfg) == "bearer podtoken"


def test_nothing_configured_says_what_was_tried(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        build_client_settings(ApiClientConf(), environ=empty_env(tmp_path))
    text = str(info.value)
    assert "spark.master" in text and "kubeconfig" in text and "KUBERNETES_SERVICE_HOST" in text


def test_from_conf_builds_a_working_adapter(tmp_path: Path) -> None:
    api = ApiClientConf(
        master="http://127.0.0.1:1", oauth_token="t", request_timeout=3.0, connection_timeout=2.0
    )
    adapter = OfficialKubernetesApi.from_conf(api, namespace_default="ns", environ=empty_env(tmp_path))
    try:
        assert isinstance(adapter, KubernetesApi)
        assert adapter._host == "http://127.0.0.1:1"
        assert adapter._timeout.connect_timeout == 2.0 and adapter._timeout.read_timeout == 3.0
    finally:
        adapter.close()
