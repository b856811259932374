"""OCI images written directly, without a registry or a daemon: uncompressed tar layers, a config and a
manifest, streamed as an OCI image layout archive into ``ctr images import``.

Layers are kept uncompressed (``application/vnd.oci.image.layer.v1.tar``): they never cross a network,
and gzip of Spark's jars would cost a minute of CPU for nothing. Each layer's digest is computed once and
kept beside it (``<layer>.sha256``).
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import attrs

LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar"
CONFIG_MEDIA_TYPE = "application/vnd.oci.image.config.v1+json"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"
CONTAINERD_NAME = "io.containerd.image.name"  # the full name `ctr images import` gives the image
OCI_REF_NAME = "org.opencontainers.image.ref.name"

_ARCHITECTURES = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def architecture() -> str:
    """This machine's OCI architecture name (``amd64``, ``arm64``)."""
    machine = platform.machine()
    return _ARCHITECTURES.get(machine, machine)


def file_digest(path: Path) -> str:
    """``sha256:<hex>`` of a file, cached in ``<path>.sha256`` (valid while the size and mtime match)."""
    stat = path.stat()
    stamp = f"{stat.st_size}:{stat.st_mtime_ns}"
    side = path.with_name(path.name + ".sha256")
    try:
        recorded_stamp, digest = side.read_text().split()
        if recorded_stamp == stamp:
            return digest
    except (OSError, ValueError):
        pass
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            sha.update(chunk)
    digest = f"sha256:{sha.hexdigest()}"
    side.write_text(f"{stamp} {digest}\n")
    return digest


@attrs.frozen
class ImageConfig:
    """The runtime part of an OCI image config (what a Dockerfile's ENV/USER/WORKDIR/ENTRYPOINT set)."""

    entrypoint: Sequence[str] = ()
    cmd: Sequence[str] = ()
    env: Mapping[str, str] = attrs.field(factory=dict)
    user: str = ""
    working_dir: str = ""

    def as_json(self) -> dict[str, Any]:
        config: dict[str, Any] = {"Env": [f"{k}={v}" for k, v in self.env.items()]}
        if self.entrypoint:
            config["Entrypoint"] = list(self.entrypoint)
        if self.cmd:
            config["Cmd"] = list(self.cmd)
        if self.user:
            config["User"] = self.user
        if self.working_dir:
            config["WorkingDir"] = self.working_dir
        return config


@attrs.frozen
class OciImage:
    """An image: its full name (``docker.io/...``: the CRI normalises short names, so a short name would
    be "not present" to the kubelet), its layers (uncompressed tars, lowest first) and its config."""

    name: str
    layers: tuple[Path, ...]
    config: ImageConfig

    def __attrs_post_init__(self) -> None:
        if "/" not in self.name or "." not in self.name.split("/")[0] or ":" not in self.name:
            raise ValueError(
                f"image name {self.name!r} is not fully qualified: write it as registry/path:tag "
                "(e.g. docker.io/k8s-backend/spark:4.3.0), as the CRI would normalise it"
            )

    def config_blob(self) -> bytes:
        document = {
            "architecture": architecture(),
            "os": "linux",
            "config": self.config.as_json(),
            "rootfs": {"type": "layers", "diff_ids": [file_digest(layer) for layer in self.layers]},
            "history": [{"created_by": f"k8s_backend: {layer.name}"} for layer in self.layers],
        }
        return json.dumps(document, sort_keys=True).encode()

    def manifest_blob(self, config: bytes) -> bytes:
        document = {
            "schemaVersion": 2,
            "mediaType": MANIFEST_MEDIA_TYPE,
            "config": _descriptor(CONFIG_MEDIA_TYPE, _digest(config), len(config)),
            "layers": [
                _descriptor(LAYER_MEDIA_TYPE, file_digest(layer), layer.stat().st_size)
                for layer in self.layers
            ],
        }
        return json.dumps(document, sort_keys=True).encode()

    def write_layout_archive(self, out: IO[bytes]) -> None:
        """Write the image as an OCI image layout tar stream to ``out`` (what ``ctr images import`` reads)."""
        config = self.config_blob()
        manifest = self.manifest_blob(config)
        tag = self.name.rsplit(":", 1)[1]
        descriptor = _descriptor(MANIFEST_MEDIA_TYPE, _digest(manifest), len(manifest))
        descriptor["annotations"] = {CONTAINERD_NAME: self.name, OCI_REF_NAME: tag}
        descriptor["platform"] = {"architecture": architecture(), "os": "linux"}
        index = {"schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": [descriptor]}
        with tarfile.open(fileobj=out, mode="w|") as archive:
            _add_bytes(archive, "oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
            _add_bytes(archive, "index.json", json.dumps(index).encode())
            for blob in (config, manifest):
                _add_bytes(archive, f"blobs/sha256/{_digest(blob).split(':')[1]}", blob)
            for layer in self.layers:
                archive.add(str(layer), arcname=f"blobs/sha256/{file_digest(layer).split(':')[1]}")


def _digest(data: bytes) -> str:
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def _descriptor(media_type: str, digest: str, size: int) -> dict[str, Any]:
    return {"mediaType": media_type, "digest": digest, "size": size}


def _add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    archive.addfile(info, io.BytesIO(data))
