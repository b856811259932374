"""The node's build cache and image archives, without building anything (no Go, no network)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from k8s_backend.local.node import __main__ as node_main
from k8s_backend.local.node.build import (
    KUBELET,
    MANIFEST,
    NODE_BINARIES,
    MissingDependency,
    NodeBuilder,
    ensure_debian_packages,
)
from k8s_backend.local.node.oci import CONTAINERD_NAME, ImageConfig, OciImage


def _fake_build(builder: NodeBuilder) -> None:
    for binary in NODE_BINARIES:
        path = builder.directory / binary.key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
        builder._record(binary, 1.0)


def test_an_empty_cache_misses_every_binary_and_a_recorded_build_none(tmp_path: Path) -> None:
    builder = NodeBuilder(cache_dir=tmp_path)
    assert [b.key for b in builder.missing()] == [b.key for b in NODE_BINARIES]
    assert builder.cached() is None
    _fake_build(builder)
    assert builder.missing() == []
    assert builder.cached() is not None
    assert builder.binaries.path("bridge") == builder.directory / "cni" / "bridge"
    assert json.loads((builder.directory / MANIFEST).read_text())["seconds"]["kubelet"] == 1.0


def test_a_binary_built_from_another_pin_or_deleted_is_rebuilt(tmp_path: Path) -> None:
    builder = NodeBuilder(cache_dir=tmp_path)
    _fake_build(builder)
    manifest = json.loads((builder.directory / MANIFEST).read_text())
    manifest["binaries"]["runc"] = "v1.0.0"
    (builder.directory / MANIFEST).write_text(json.dumps(manifest))
    (builder.directory / KUBELET.key).unlink()
    assert sorted(b.key for b in builder.missing()) == ["kubelet", "runc"]


def test_unknown_binary_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown node binary 'crun'.*containerd"):
        NodeBuilder(cache_dir=tmp_path).binaries.path("crun")


def test_a_missing_debian_package_is_named_with_the_command_to_install_it() -> None:
    with pytest.raises(MissingDependency, match=r"no-such-package-k8sb for testing.*apt-get install -y"):
        ensure_debian_packages({"no-such-package-k8sb": "testing"}, print, install=False)


def test_build_optional_without_go_says_why_in_one_line_and_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("K8S_BACKEND_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("GO", raising=False)
    assert node_main.main(["build", "--optional"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("skipped: ") and "Go >= 1.26" in err[0]
    assert node_main.main(["build"]) == 1


def _layer(tmp_path: Path) -> Path:
    layer = tmp_path / "layer.tar"
    with tarfile.open(layer, "w") as archive:
        info = tarfile.TarInfo("hello")
        info.size = 2
        archive.addfile(info, io.BytesIO(b"hi"))
    return layer


def test_an_image_archive_is_an_oci_layout_whose_digests_match(tmp_path: Path) -> None:
    layer = _layer(tmp_path)
    config = ImageConfig(entrypoint=("/x",), env={"A": "1"}, user="185", working_dir="/w")
    image = OciImage("docker.io/k8s-backend/test:1", (layer,), config)
    out = io.BytesIO()
    image.write_layout_archive(out)
    with tarfile.open(fileobj=io.BytesIO(out.getvalue())) as archive:
        blobs = {
            name.rsplit("/", 1)[1]: archive.extractfile(name).read()  # type: ignore[union-attr]
            for name in archive.getnames()
            if name.startswith("blobs/")
        }
        index = json.loads(archive.extractfile("index.json").read())  # type: ignore[union-attr]
    for digest, data in blobs.items():
        assert hashlib.sha256(data).hexdigest() == digest
    descriptor = index["manifests"][0]
    assert descriptor["annotations"][CONTAINERD_NAME] == "docker.io/k8s-backend/test:1"
    manifest = json.loads(blobs[descriptor["digest"].split(":")[1]])
    config_doc = json.loads(blobs[manifest["config"]["digest"].split(":")[1]])
    assert config_doc["config"] == {"Env": ["A=1"], "Entrypoint": ["/x"], "User": "185", "WorkingDir": "/w"}
    layer_digest = "sha256:" + hashlib.sha256(layer.read_bytes()).hexdigest()
    assert config_doc["rootfs"]["diff_ids"] == [layer_digest]
    assert [entry["digest"] for entry in manifest["layers"]] == [layer_digest]


def test_a_short_image_name_is_refused_since_the_cri_would_normalise_it(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not fully qualified"):
        OciImage("local/bb:1", (_layer(tmp_path),), ImageConfig())


def test_a_layer_digest_is_recomputed_when_the_layer_changes(tmp_path: Path) -> None:
    layer = _layer(tmp_path)
    image = OciImage("docker.io/k8s-backend/test:1", (layer,), ImageConfig())
    first = json.loads(image.config_blob())["rootfs"]["diff_ids"]
    layer.write_bytes(layer.read_bytes() + b"\0" * 1024)
    os.utime(layer, ns=(1, 1))
    assert json.loads(image.config_blob())["rootfs"]["diff_ids"] != first


def test_an_empty_image_cache_misses_every_layer(tmp_path: Path) -> None:
    from k8s_backend.local.node.images import ImageBuilder

    assert ImageBuilder(cache_dir=tmp_path).missing() == ["pause", "Debian base", "Spark"]


def test_without_root_the_optional_build_says_why_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(node_main.os, "geteuid", lambda: 1000)
    assert node_main.main(["build", "--optional"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("skipped: a real node needs root"), err


def test_the_host_tools_the_node_needs_are_named_with_their_debian_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from k8s_backend.local.node import build

    monkeypatch.setattr(
        build.shutil, "which", lambda tool: None if tool == "iptables" else f"/usr/sbin/{tool}"
    )
    missing = build.missing_host_tools()
    assert list(missing) == ["iptables"] and "FORWARD rule" in missing["iptables"]
    monkeypatch.setattr(build, "missing_debian_packages", lambda packages: list(packages))  # not installed
    with pytest.raises(MissingDependency, match=r"apt-get install -y iptables"):
        build.ensure_host_tools(lambda line: None, install=False)
