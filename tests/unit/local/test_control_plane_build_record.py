"""ControlPlaneBuilder records how long a build took (for benchmarks/control_plane.py), with a stand-in
``go`` that "builds" scripts answering ``--version`` as the real binaries do."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from k8s_backend.local.control_plane import ControlPlaneBuilder
from k8s_backend.local.control_plane.build import ALL_BINARIES, BUILD_RECORD

FAKE_GO = """\
#!/bin/sh
case "$1" in
  version) echo "go version go1.26.8 linux/amd64" ;;
  mod) [ "$2" = tidy ] && touch go.sum; echo "{}" ;;
  build)
    out="$3"; package="$6"
    case "$package" in
      go.etcd.io/*) answer="etcd Version: 3.7.3" ;;
      *) answer="Kubernetes v1.37.2" ;;
    esac
    printf '#!/bin/sh\\necho "%s"\\n' "$answer" > "$out"; chmod +x "$out" ;;
esac
"""


def builder(tmp_path: Path) -> ControlPlaneBuilder:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    go = bin_dir / "go"
    go.write_text(textwrap.dedent(FAKE_GO))
    go.chmod(0o755)
    environ = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(tmp_path)}
    return ControlPlaneBuilder(cache_dir=tmp_path / "cache", environ=environ)


def test_a_build_records_what_it_built_and_how_long_it_took(tmp_path: Path) -> None:
    first = builder(tmp_path)
    assert first.recorded_build() is None  # nothing built yet
    binaries = first.ensure()
    record = first.recorded_build()
    assert record is not None
    assert record["built"] == sorted(ALL_BINARIES)
    assert record["seconds"] >= max(record[name] for name in ALL_BINARIES) >= 0
    assert (binaries.directory / BUILD_RECORD).exists()
    # A cached build builds nothing and leaves the record of the build that did.
    again = builder(tmp_path)
    assert again.ensure() == binaries
    assert again.recorded_build() == record


def test_a_partial_rebuild_records_only_what_it_rebuilt(tmp_path: Path) -> None:
    first = builder(tmp_path)
    binaries = first.ensure()
    binaries.etcd.unlink()
    second = builder(tmp_path)
    second.ensure()
    record = second.recorded_build()
    assert record is not None and record["built"] == ["etcd"] and "kube-apiserver" not in record
