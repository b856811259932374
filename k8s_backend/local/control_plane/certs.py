"""The keys and certificates of one control plane: a CA made for it, the API server's serving certificate
for 127.0.0.1/localhost signed by that CA, and the RSA key that signs service-account tokens.

The ``openssl`` command is used when present, else the ``cryptography`` package when importable; with
neither, :class:`CertificateError` says what to install.
"""

from __future__ import annotations

import datetime
import importlib
import ipaddress
import logging
import shutil
import subprocess
from pathlib import Path
from typing import Any

import attrs

log = logging.getLogger(__name__)

CA_NAME = "k8s-backend-control-plane-ca"
SERVING_DNS_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")
_DAYS = 3650


class CertificateError(Exception):
    """No tool to make certificates with, or the tool failed."""


@attrs.frozen
class ClusterPki:
    """Paths of the PEM files of one cluster."""

    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path  # private: signs tokens (API server and controller manager)
    service_account_public: Path  # verifies them (API server)


def make_pki(directory: Path, *, service_ip: str = "10.0.0.1") -> ClusterPki:
    """Create the CA, serving certificate and service-account key pair in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = ClusterPki(
        ca_cert=directory / "ca.crt",
        ca_key=directory / "ca.key",
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        service_account_key=directory / "sa.key",
        service_account_public=directory / "sa.pub",
    )
    # The service IP is in the SANs because in-cluster clients reach the API server through it.
    ips = ("127.0.0.1", service_ip)
    openssl = shutil.which("openssl")
    if openssl is not None:
        _with_openssl(openssl, pki, ips)
    else:
        crypto = _cryptography()
        if crypto is None:
            raise CertificateError(
                "the real control plane needs the openssl command on PATH or the Python package "
                "cryptography (pip install cryptography) to make its TLS certificates"
            )
        _with_cryptography(pki, ips)
    for key in (pki.ca_key, pki.serving_key, pki.service_account_key):
        key.chmod(0o600)
    return pki


def _openssl(openssl: str, *args: str, cwd: Path) -> None:
    proc = subprocess.run([openssl, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise CertificateError(f"openssl {args[0]} failed: {proc.stderr.strip()[-2000:]}")


def _with_openssl(openssl: str, pki: ClusterPki, ips: tuple[str, ...]) -> None:
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
    _openssl(openssl, "genrsa", "-out", str(pki.serving_key), "2048", cwd=cwd)
    csr = cwd / "apiserver.csr"
    _openssl(
        openssl, "req", "-new", "-key", str(pki.serving_key), "-out", str(csr), "-subj", "/CN=kube-apiserver",
        cwd=cwd,
    )  # fmt: skip
    alt_names = ",".join([*(f"IP:{ip}" for ip in ips), *(f"DNS:{name}" for name in SERVING_DNS_NAMES)])
    extensions = cwd / "apiserver.ext"
    # The key identifiers matter: strict verifiers (Python 3.13's default) want an authorityKeyIdentifier.
    extensions.write_text(
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
        "subjectKeyIdentifier=hash\n"
        "authorityKeyIdentifier=keyid,issuer\n"
        f"subjectAltName={alt_names}\n"
    )
    _openssl(
        openssl, "x509", "-req", "-in", str(csr), "-CA", str(pki.ca_cert), "-CAkey", str(pki.ca_key),
        "-CAcreateserial", "-out", str(pki.serving_cert), "-days", str(_DAYS), "-extfile", str(extensions),
        cwd=cwd,
    )  # fmt: skip
    _openssl(openssl, "genrsa", "-out", str(pki.service_account_key), "2048", cwd=cwd)
    _openssl(
        openssl, "rsa", "-in", str(pki.service_account_key), "-pubout",
        "-out", str(pki.service_account_public), cwd=cwd,
    )  # fmt: skip


def _cryptography() -> Any | None:
    try:
        return importlib.import_module("cryptography")
    except ImportError:
        return None


def _with_cryptography(pki: ClusterPki, ips: tuple[str, ...]) -> None:
    # Imported by name: cryptography is optional, and typed as Any so mypy needs no stubs for it.
    x509: Any = importlib.import_module("cryptography.x509")
    hashes: Any = importlib.import_module("cryptography.hazmat.primitives.hashes")
    rsa: Any = importlib.import_module("cryptography.hazmat.primitives.asymmetric.rsa")
    ser: Any = importlib.import_module("cryptography.hazmat.primitives.serialization")
    oid: Any = importlib.import_module("cryptography.x509.oid")

    def new_key(path: Path) -> Any:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        path.write_bytes(
            key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.TraditionalOpenSSL, ser.NoEncryption())
        )
        return key

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = new_key(pki.ca_key)
    ca_subject = x509.Name([x509.NameAttribute(oid.NameOID.COMMON_NAME, CA_NAME)])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_subject)
        .issuer_name(ca_subject)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pki.ca_cert.write_bytes(ca.public_bytes(ser.Encoding.PEM))
    key = new_key(pki.serving_key)
    names = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    names += [x509.DNSName(name) for name in SERVING_DNS_NAMES]
    serving = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(oid.NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pki.serving_cert.write_bytes(serving.public_bytes(ser.Encoding.PEM))
    sa_key = new_key(pki.service_account_key)
    pki.service_account_public.write_bytes(
        sa_key.public_key().public_bytes(ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo)
    )
