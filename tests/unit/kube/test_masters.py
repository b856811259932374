"""Master URLs: every form k8s_backend accepts, every refusal, and the formatting the CLI needs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from k8s_backend.errors import ConfigError
from k8s_backend.kube import masters
from k8s_backend.kube.masters import (
    IN_CLUSTER_MASTER,
    K8S,
    PYK8S,
    Master,
    MasterKind,
    accepted_forms,
    api_url_kind,
    is_kubernetes,
    is_pyk8s,
    normalize,
    parse_master,
    pyk8s_url,
    strip_scheme,
)


@pytest.mark.parametrize(
    ("url", "kind", "server"),
    [
        ("pyk8s://https://10.0.0.1:6443", MasterKind.API_SERVER, "https://10.0.0.1:6443"),
        ("pyk8s://http://127.0.0.1:8080/", MasterKind.API_SERVER, "http://127.0.0.1:8080"),
        ("pyk8s://kube.example.com:443", MasterKind.API_SERVER, "https://kube.example.com:443"),
        ("pyk8s://kube.example.com", MasterKind.API_SERVER, "https://kube.example.com"),
        ("pyk8s://https://[::1]:6443", MasterKind.API_SERVER, "https://[::1]:6443"),
        ("pyk8s://https://h:6443/prefix/", MasterKind.API_SERVER, "https://h:6443/prefix"),
        ("k8s://https://api.example.com", MasterKind.API_SERVER, "https://api.example.com"),
        ("k8s://api.example.com:6443", MasterKind.API_SERVER, "https://api.example.com:6443"),
        ("pyk8s://", MasterKind.DEFAULT, ""),
        ("pyk8s:///", MasterKind.DEFAULT, ""),
        ("k8s://", MasterKind.DEFAULT, ""),
        ("pyk8s://local", MasterKind.LOCAL, ""),
        ("pyk8s://local/", MasterKind.LOCAL, ""),
        ("  pyk8s://local  ", MasterKind.LOCAL, ""),
    ],
)
def test_every_form(url: str, kind: MasterKind, server: str) -> None:
    parsed = parse_master(url)
    assert parsed == Master(url=url.strip(), kind=kind, api_server=server)


@pytest.mark.parametrize(
    ("url", "api_url"),
    [
        ("pyk8s://https://h:1/", "https://h:1"),
        ("pyk8s://h:1", "https://h:1"),
        ("pyk8s://", ""),
        ("pyk8s://local", "local"),
    ],
)
def test_the_api_url_is_what_the_configuration_holds(url: str, api_url: str) -> None:
    assert parse_master(url).api_url == api_url
    assert api_url_kind(api_url) is parse_master(url).kind


def test_what_the_backend_reads() -> None:
    assert parse_master("pyk8s://https://h:6443").backend_master() == "k8s://https://h:6443"
    assert parse_master("pyk8s://h:6443").backend_master() == "k8s://https://h:6443"
    assert parse_master("pyk8s://").backend_master() is None
    assert parse_master("pyk8s://local").backend_master() is None  # the local cluster is not up yet
    assert parse_master("pyk8s://local").backend_master("http://127.0.0.1:9") == "k8s://http://127.0.0.1:9"
    assert parse_master("pyk8s://").backend_master("http://127.0.0.1:9") is None


def test_a_bare_url_where_the_scheme_is_optional() -> None:
    key = "spark.kubernetes.driver.master"
    parsed = parse_master("https://kubernetes.default.svc", key=key, scheme_required=False)
    assert (parsed.kind, parsed.api_server) == (MasterKind.API_SERVER, "https://kubernetes.default.svc")
    assert parse_master("10.0.0.1:443", key=key, scheme_required=False).api_url == "https://10.0.0.1:443"
    assert parse_master("k8s://https://b:2", key=key, scheme_required=False).api_url == "https://b:2"
    assert parse_master("local", key=key, scheme_required=False).kind is MasterKind.LOCAL
    assert parse_master("", key=key, scheme_required=False).kind is MasterKind.DEFAULT


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("local[2]", "does not start with pyk8s:// or k8s://"),
        ("spark://h:7077", "does not start with pyk8s:// or k8s://"),
        ("", "does not start with"),
        ("pyk8s://ftp://host", "scheme is 'ftp', not http or https"),
        ("k8s://https://host:port", "Port could not be cast"),
        ("pyk8s://https://h:99999", "out of range"),
        ("pyk8s://https://", "has no host"),
        ("pyk8s://https://[::1", "Invalid IPv6 URL"),
    ],
)
def test_every_refusal_names_the_key_the_value_and_the_forms(url: str, why: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_master(url)
    error = info.value
    assert (error.key, error.value) == ("spark.master", url)
    message = str(error)
    assert message.startswith(f"spark.master={url} is not a Kubernetes API server URL: use ")
    assert accepted_forms() in message and why in message


def test_refusals_name_the_key_they_are_given() -> None:
    with pytest.raises(ConfigError, match=r"^spark.kubernetes.driver.master=local\[\*\] is not") as info:
        parse_master("local[*]", key="spark.kubernetes.driver.master", scheme_required=False)
    assert info.value.key == "spark.kubernetes.driver.master"


def test_pyk8s_only_refuses_spark_s_own_scheme_and_says_so() -> None:
    assert parse_master("pyk8s://local", schemes=(PYK8S,)).kind is MasterKind.LOCAL
    with pytest.raises(ConfigError) as info:
        parse_master("k8s://https://h:1", schemes=(PYK8S,))
    message = str(info.value)
    assert "does not start with pyk8s://)" in message and "k8s://https://h:1" in message
    assert f"(or {K8S}" not in message  # no synonym offered where it is refused
    assert "pyk8s://local" in message


def test_accepted_forms() -> None:
    assert accepted_forms() == (
        "pyk8s://https://HOST:PORT (or k8s://https://HOST:PORT) for an API server, pyk8s:// for the "
        "kubeconfig or in-cluster configuration, or pyk8s://local for an embedded local cluster"
    )
    assert "(or k8s://" not in accepted_forms((PYK8S,))


@pytest.mark.parametrize(
    ("master", "normalized"),
    [
        (None, "pyk8s://"),
        ("", "pyk8s://"),
        ("   ", "pyk8s://"),
        ("pyk8s://local", "pyk8s://local"),
        (" pyk8s://h:1 ", "pyk8s://h:1"),  # the rest is left as written, for parse_master to check
        ("k8s://https://example.com:6443", "pyk8s://https://example.com:6443"),
        ("k8s://", "pyk8s://"),
        ("pyk8s://https://host:notaport", "pyk8s://https://host:notaport"),
    ],
)
def test_normalize(master: str | None, normalized: str) -> None:
    assert normalize(master) == normalized


@pytest.mark.parametrize("master", ["yarn", "local[2]", "spark://h:7077", "https://h:6443"])
def test_normalize_refuses_other_masters(master: str) -> None:
    with pytest.raises(ConfigError, match="k8s_backend runs applications on Kubernetes") as info:
        normalize(master)
    assert (info.value.key, info.value.value) == ("spark.master", master)


def test_strip_scheme_and_pyk8s_url() -> None:
    assert strip_scheme("pyk8s://https://h:1") == "https://h:1"
    assert strip_scheme("k8s://https://h:1") == "https://h:1"
    assert strip_scheme("https://h:1") == "https://h:1"
    assert strip_scheme("k8s://h", (PYK8S,)) == "k8s://h"
    assert pyk8s_url("http://127.0.0.1:9") == "pyk8s://http://127.0.0.1:9"
    assert pyk8s_url("") == PYK8S
    assert parse_master(IN_CLUSTER_MASTER).api_server == "https://kubernetes.default.svc"


def test_kinds_of_master_strings() -> None:
    assert is_pyk8s("pyk8s://local") and is_pyk8s(" pyk8s://")
    assert not is_pyk8s("k8s://https://h:1") and not is_pyk8s("local[2]") and not is_pyk8s(None)
    assert is_kubernetes("k8s://https://h:1") and is_kubernetes("pyk8s://")
    assert not is_kubernetes("local[*]") and not is_kubernetes("") and not is_kubernetes(None)
    assert api_url_kind("") is MasterKind.DEFAULT
    assert api_url_kind("local") is MasterKind.LOCAL
    assert api_url_kind("https://h:1") is MasterKind.API_SERVER


def test_the_module_imports_nothing_of_k8s_backend_but_errors() -> None:
    tree = ast.parse(Path(masters.__file__).read_text())
    modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    modules |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert {m for m in modules if m and m.startswith("k8s_backend")} == {"k8s_backend.errors"}
