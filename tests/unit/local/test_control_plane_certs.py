"""The control plane's certificates (made with openssl, or with the cryptography package when openssl is
missing): the API server's client certificate towards kubelets, a kubelet's serving certificate with the
node's addresses, and the kubelet configuration that serves it and refuses anonymous clients. The
certificates are read back with the openssl command and checked in a TLS handshake."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from k8s_backend.local.control_plane import certs
from k8s_backend.local.control_plane.certs import (
    CertificateSpec,
    ClusterPki,
    issue_certificate,
    kubelet_serving_spec,
    make_pki,
)
from k8s_backend.local.control_plane.credentials import KUBELET_CLIENT, kubelet_client_role_binding
from k8s_backend.local.node.runtime import KubeletTls, kubelet_config

NODE = "k8s-backend-kubelet"
GATEWAY = "198.18.7.1"


OPENSSL = shutil.which("openssl")
pytestmark = pytest.mark.skipif(OPENSSL is None, reason="reading certificates back needs the openssl command")


@pytest.fixture(params=["openssl", "cryptography"])
def pki(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ClusterPki]:
    if request.param == "cryptography":
        pytest.importorskip("cryptography")
        # Without the openssl command make_pki uses the cryptography package; the test still reads with it.
        monkeypatch.setattr(certs.shutil, "which", lambda name: None)
    yield make_pki(tmp_path / "pki")


def openssl(*args: str) -> str:
    assert OPENSSL is not None
    return subprocess.run([OPENSSL, *args], capture_output=True, text=True, check=True).stdout


def describe(path: Path) -> str:
    """The subject, names and usages of a certificate, as openssl prints them."""
    return openssl(
        "x509", "-in", str(path), "-noout", "-subject", "-nameopt", "RFC2253",
        "-ext", "subjectAltName,extendedKeyUsage,basicConstraints",
    )  # fmt: skip


def verify(pki: ClusterPki, cert: Path) -> str:
    return openssl("verify", "-CAfile", str(pki.ca_cert), str(cert)).strip()


def test_the_kubelet_serving_spec_names_the_node_and_its_addresses() -> None:
    spec = kubelet_serving_spec(NODE, [GATEWAY, "127.0.0.1"])
    assert spec.ips == (GATEWAY, "127.0.0.1")  # each once, the node's address first
    assert spec.dns_names == (NODE, "localhost")
    assert (spec.common_name, spec.organization, spec.usage) == (
        f"system:node:{NODE}",
        "system:nodes",
        "server",
    )
    assert spec.alt_names == f"IP:{GATEWAY},IP:127.0.0.1,DNS:{NODE},DNS:localhost"


def test_a_spec_refuses_a_host_name_among_ips_and_an_unknown_usage() -> None:
    with pytest.raises(ValueError, match=r"CertificateSpec.ips: 'node-1' is not an IP address.*dns_names"):
        CertificateSpec("x", ips=("node-1",))
    with pytest.raises(ValueError, match="usage"):
        CertificateSpec("x", usage="both")


def test_a_client_spec_has_no_subject_alt_name() -> None:
    extensions = CertificateSpec(KUBELET_CLIENT, usage="client").openssl_extensions()
    assert "extendedKeyUsage=clientAuth" in extensions
    assert "subjectAltName" not in extensions


def test_the_apiservers_kubelet_client_certificate_names_the_bound_user(pki: ClusterPki) -> None:
    text = describe(pki.kubelet_client_cert)
    assert f"subject=CN={KUBELET_CLIENT}" in text
    assert "TLS Web Client Authentication" in text
    assert "TLS Web Server Authentication" not in text
    assert "Subject Alternative Name" not in text
    assert verify(pki, pki.kubelet_client_cert).endswith(": OK")
    assert pki.kubelet_client_key.stat().st_mode & 0o077 == 0
    binding = kubelet_client_role_binding()
    assert binding["roleRef"]["name"] == "system:kubelet-api-admin"
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": KUBELET_CLIENT}
    ]


def test_the_apiserver_serving_certificate_keeps_its_names(pki: ClusterPki) -> None:
    text = describe(pki.serving_cert)
    names = ", ".join(
        ["IP Address:127.0.0.1", "IP Address:10.0.0.1", *(f"DNS:{n}" for n in certs.SERVING_DNS_NAMES)]
    )
    assert names in text
    assert "TLS Web Server Authentication" in text
    assert verify(pki, pki.serving_cert).endswith(": OK")


def test_a_kubelet_serving_certificate_passes_a_tls_handshake_checked_against_the_ca(
    pki: ClusterPki, tmp_path: Path
) -> None:
    tls = KubeletTls(tmp_path / "kubelet" / "kubelet.crt", tmp_path / "kubelet" / "kubelet.key")
    issue_certificate(pki, kubelet_serving_spec(NODE, [GATEWAY]), tls.cert, tls.key)
    text = describe(tls.cert)
    assert f"IP Address:{GATEWAY}, IP Address:127.0.0.1, DNS:{NODE}, DNS:localhost" in text
    assert f"subject=CN=system:node:{NODE},O=system:nodes" in text
    assert verify(pki, tls.cert).endswith(": OK")
    assert tls.key.stat().st_mode & 0o077 == 0
    # The API server checks the kubelet's certificate against the CA and the address it dials (127.0.0.1
    # here: the gateway's address is not on this machine); the kubelet asks for the client certificate.
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tls.cert, tls.key)
    server.load_verify_locations(pki.ca_cert)
    server.verify_mode = ssl.CERT_REQUIRED
    client = ssl.create_default_context(cafile=str(pki.ca_cert))
    client.load_cert_chain(pki.kubelet_client_cert, pki.kubelet_client_key)
    seen: dict[str, Any] = {}
    with socket.create_server(("127.0.0.1", 0)) as listener:

        def serve() -> None:
            connection, _ = listener.accept()
            with server.wrap_socket(connection, server_side=True) as tls_connection:
                seen["client"] = tls_connection.getpeercert()
                tls_connection.sendall(b"ok")

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        port = listener.getsockname()[1]
        with (
            socket.create_connection(("127.0.0.1", port), timeout=30) as raw,
            client.wrap_socket(raw, server_hostname="127.0.0.1") as tls_connection,
        ):
            assert tls_connection.recv(2) == b"ok"
            served = tls_connection.getpeercert()
        thread.join(timeout=30)
    assert dict(pair[0] for pair in seen["client"]["subject"])["commonName"] == KUBELET_CLIENT
    assert ("IP Address", GATEWAY) in served["subjectAltName"]


def test_the_kubelet_config_serves_the_certificate_and_refuses_anonymous_clients(tmp_path: Path) -> None:
    tls = KubeletTls(tmp_path / "kubelet.crt", tmp_path / "kubelet.key")
    config: dict[str, Any] = kubelet_config(
        work=tmp_path, socket=tmp_path / "containerd.sock", cgroup_root="k8s-backend-x", address=GATEWAY,
        port=10250, healthz_port=10248, ca_file="/ca.crt", tls=tls,
    )  # fmt: skip
    assert (config["tlsCertFile"], config["tlsPrivateKeyFile"]) == (str(tls.cert), str(tls.key))
    assert config["authentication"]["anonymous"] == {"enabled": False}
    assert config["authentication"]["x509"] == {"clientCAFile": "/ca.crt"}
    assert config["authorization"] == {"mode": "Webhook"}
    assert config["readOnlyPort"] == 0
