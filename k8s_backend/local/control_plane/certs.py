"""The keys and certificates of one control plane: a CA made for it, the certificates it signs (the API
server's serving certificate for 127.0.0.1/localhost, the API server's client certificate for kubelets,
and on request a kubelet's serving certificate), and the RSA key that signs service-account tokens.

The ``openssl`` command is used when present, else the ``cryptography`` package when importable; with
neither, :class:`CertificateError` says what to install.
"""

from __future__ import annotations

import datetime
import importlib
import ipaddress
import logging
import secrets
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from k8s_backend.local.control_plane.credentials import KUBELET_CLIENT

log = logging.getLogger(__name__)

CA_NAME = "k8s-backend-control-plane-ca"
SERVING_DNS_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")
USAGES = ("server", "client")
_DAYS = 3650


class CertificateError(Exception):
    """No tool to make certificates with, or the tool failed."""


def _check_ips(instance: CertificateSpec, attribute: attrs.Attribute[Any], ips: tuple[str, ...]) -> None:
    for ip in ips:
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            raise ValueError(f"CertificateSpec.ips: {ip!r} is not an IP address; put host names in "
                             "dns_names") from None  # fmt: skip


@attrs.frozen
class CertificateSpec:
    """What a certificate signed by the cluster's CA says: who it names and what it is for.

    :param usage: ``server`` (serverAuth; its ``ips`` and ``dns_names`` are the names a client checks)
        or ``client`` (clientAuth; ``common_name`` is the user, ``organization`` a group).
    """

    common_name: str
    usage: str = attrs.field(default="server", validator=attrs.validators.in_(USAGES))
    organization: str = ""
    ips: tuple[str, ...] = attrs.field(default=(), validator=_check_ips)
    dns_names: tuple[str, ...] = ()

    @property
    def openssl_subject(self) -> str:
        return (f"/O={self.organization}" if self.organization else "") + f"/CN={self.common_name}"

    @property
    def alt_names(self) -> str:
        """The subjectAltName value, as openssl writes it (empty without names)."""
        return ",".join([*(f"IP:{ip}" for ip in self.ips), *(f"DNS:{name}" for name in self.dns_names)])

    def openssl_extensions(self) -> str:
        """The ``-extfile`` of ``openssl x509 -req``."""
        # The key identifiers matter: strict verifiers (Python 3.13's default) want an authorityKeyIdentifier.
        lines = [
            "basicConstraints=critical,CA:FALSE",
            "keyUsage=critical,digitalSignature,keyEncipherment",
            f"extendedKeyUsage={self.usage}Auth",
            "subjectKeyIdentifier=hash",
            "authorityKeyIdentifier=keyid,issuer",
        ]
        if self.alt_names:
            lines.append(f"subjectAltName={self.alt_names}")
        return "\n".join(lines) + "\n"


def apiserver_serving_spec(service_ip: str) -> CertificateSpec:
    """The API server's serving certificate; the service IP is there for in-cluster clients."""
    return CertificateSpec("kube-apiserver", ips=("127.0.0.1", service_ip), dns_names=SERVING_DNS_NAMES)


def kubelet_client_spec() -> CertificateSpec:
    """The API server's certificate towards kubelets (logs, exec): the user :data:`KUBELET_CLIENT`."""
    return CertificateSpec(KUBELET_CLIENT, usage="client")


def kubelet_serving_spec(node_name: str, addresses: Sequence[str]) -> CertificateSpec:
    """A kubelet's serving certificate: the API server dials the node's InternalIP (``addresses``) and
    checks it; 127.0.0.1 and the node's name are there for clients on this machine."""
    return CertificateSpec(
        f"system:node:{node_name}",
        organization="system:nodes",
        ips=(*dict.fromkeys([*addresses, "127.0.0.1"]),),
        dns_names=(node_name, "localhost"),
    )


@attrs.frozen
class ClusterPki:
    """Paths of the PEM files of one cluster."""

    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path  # private: signs tokens (API server and controller manager)
    service_account_public: Path  # verifies them (API server)
    kubelet_client_cert: Path  # the API server's client certificate towards kubelets
    kubelet_client_key: Path


def make_pki(directory: Path, *, service_ip: str = "10.0.0.1") -> ClusterPki:
    """Create the CA, the certificates it signs for the API server and the service-account key pair in
    ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = ClusterPki(
        ca_cert=directory / "ca.crt",
        ca_key=directory / "ca.key",
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        service_account_key=directory / "sa.key",
        service_account_public=directory / "sa.pub",
        kubelet_client_cert=directory / "apiserver-kubelet-client.crt",
        kubelet_client_key=directory / "apiserver-kubelet-client.key",
    )
    openssl = _tool()
    if openssl is not None:
        _ca_with_openssl(openssl, pki)
        _key_pair_with_openssl(openssl, pki)
    else:
        _ca_with_cryptography(pki)
        _key_pair_with_cryptography(pki)
    issue_certificate(pki, apiserver_serving_spec(service_ip), pki.serving_cert, pki.serving_key)
    issue_certificate(pki, kubelet_client_spec(), pki.kubelet_client_cert, pki.kubelet_client_key)
    for key in (pki.ca_key, pki.service_account_key):
        key.chmod(0o600)
    return pki


def issue_certificate(pki: ClusterPki, spec: CertificateSpec, cert: Path, key: Path) -> None:
    """Write a new key to ``key`` (mode 0600) and ``spec``'s certificate, signed by the CA, to ``cert``."""
    cert.parent.mkdir(parents=True, exist_ok=True)
    openssl = _tool()
    if openssl is not None:
        _leaf_with_openssl(openssl, pki, spec, cert, key)
    else:
        _leaf_with_cryptography(pki, spec, cert, key)
    key.chmod(0o600)


def _tool() -> str | None:
    """The openssl command, or None to use the cryptography package; :class:`CertificateError` if neither."""
    openssl = shutil.which("openssl")
    if openssl is None and _cryptography() is None:
        raise CertificateError(
            "the real control plane needs the openssl command on PATH or the Python package "
            "cryptography (pip install cryptography) to make its TLS certificates"
        )
    return openssl


def _openssl(openssl: str, *args: str, cwd: Path) -> None:
    proc = subprocess.run([openssl, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise CertificateError(f"openssl {args[0]} failed: {proc.stderr.strip()[-2000:]}")


def _ca_with_openssl(openssl: str, pki: ClusterPki) -> None:
    cwd = pki.ca_cert.parent
    _openssl(openssl, "genrsa", "-out", str(pki.ca_key), "2048", cwd=cwd)
    _openssl(
        openssl, "req", "-x509", "-new", "-key", str(pki.ca_key), "-out", str(pki.ca_cert),
        "-days", str(_DAYS), "-subj", f"/CN={CA_NAME}",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
        "-addext", "subjectKeyIdentifier=hash",
        cwd=cwd,
    )  # fmt: skip


def _key_pair_with_openssl(openssl: str, pki: ClusterPki) -> None:
    cwd = pki.ca_cert.parent
    _openssl(openssl, "genrsa", "-out", str(pki.service_account_key), "2048", cwd=cwd)
    _openssl(
        openssl, "rsa", "-in", str(pki.service_account_key), "-pubout",
        "-out", str(pki.service_account_public), cwd=cwd,
    )  # fmt: skip


def _leaf_with_openssl(openssl: str, pki: ClusterPki, spec: CertificateSpec, cert: Path, key: Path) -> None:
    cwd = cert.parent
    _openssl(openssl, "genrsa", "-out", str(key), "2048", cwd=cwd)
    csr, extensions = cert.with_suffix(".csr"), cert.with_suffix(".ext")
    subject = spec.openssl_subject
    _openssl(openssl, "req", "-new", "-key", str(key), "-out", str(csr), "-subj", subject, cwd=cwd)
    extensions.write_text(spec.openssl_extensions())
    # A random serial per certificate (-CAcreateserial would share one serial file between directories).
    _openssl(
        openssl, "x509", "-req", "-in", str(csr), "-CA", str(pki.ca_cert), "-CAkey", str(pki.ca_key),
        "-set_serial", str(_serial()), "-out", str(cert), "-days", str(_DAYS), "-extfile", str(extensions),
        cwd=cwd,
    )  # fmt: skip


def _serial() -> int:
    return secrets.randbits(63) | 1  # positive and non-zero, as RFC 5280 wants


def _cryptography() -> Any | None:
    try:
        return importlib.import_module("cryptography")
    except ImportError:
        return None


def _module(name: str) -> Any:
    # Imported by name: cryptography is optional, and typed as Any so mypy needs no stubs for it.
    return importlib.import_module(f"cryptography.{name}")


def _new_key(path: Path) -> Any:
    rsa, ser = _module("hazmat.primitives.asymmetric.rsa"), _module("hazmat.primitives.serialization")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.TraditionalOpenSSL, ser.NoEncryption())
    path.write_bytes(pem)
    return key


def _validity(builder: Any) -> Any:
    now = datetime.datetime.now(datetime.timezone.utc)
    return builder.not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(
        now + datetime.timedelta(days=_DAYS)
    )


def _ca_with_cryptography(pki: ClusterPki) -> None:
    x509, hashes, oid = _module("x509"), _module("hazmat.primitives.hashes"), _module("x509.oid")
    ser = _module("hazmat.primitives.serialization")
    ca_key = _new_key(pki.ca_key)
    ca_subject = x509.Name([x509.NameAttribute(oid.NameOID.COMMON_NAME, CA_NAME)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(ca_subject)
        .issuer_name(ca_subject)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
    )
    pki.ca_cert.write_bytes(_validity(builder).sign(ca_key, hashes.SHA256()).public_bytes(ser.Encoding.PEM))


def _key_pair_with_cryptography(pki: ClusterPki) -> None:
    ser = _module("hazmat.primitives.serialization")
    sa_key = _new_key(pki.service_account_key)
    pki.service_account_public.write_bytes(
        sa_key.public_key().public_bytes(ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo)
    )


def _leaf_with_cryptography(pki: ClusterPki, spec: CertificateSpec, cert: Path, key: Path) -> None:
    x509, hashes, oid = _module("x509"), _module("hazmat.primitives.hashes"), _module("x509.oid")
    ser = _module("hazmat.primitives.serialization")
    ca_key = ser.load_pem_private_key(pki.ca_key.read_bytes(), password=None)
    ca = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    subject = [x509.NameAttribute(oid.NameOID.COMMON_NAME, spec.common_name)]
    if spec.organization:
        subject.insert(0, x509.NameAttribute(oid.NameOID.ORGANIZATION_NAME, spec.organization))
    purposes = oid.ExtendedKeyUsageOID
    usage = purposes.SERVER_AUTH if spec.usage == "server" else purposes.CLIENT_AUTH
    public = _new_key(key).public_key()
    ca_ski = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(subject))
        .issuer_name(ca.subject)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True
        )
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
    )
    names = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in spec.ips]
    names += [x509.DNSName(name) for name in spec.dns_names]
    if names:  # an empty subjectAltName is invalid (RFC 5280)
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert.write_bytes(_validity(builder).sign(ca_key, hashes.SHA256()).public_bytes(ser.Encoding.PEM))
