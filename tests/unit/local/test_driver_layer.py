"""The driver image's layer: what goes into it, and when a cached one is reused (no pip, no network)."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from k8s_backend.local.node import driver_layer
from k8s_backend.local.node.images import ImageBuilder

METADATA = """Metadata-Version: 2.1
Name: k8s_backend
Version: 0.1.0
Requires-Dist: kubernetes<40,>=30
Requires-Dist: pyspark<5,>=4.0
Requires-Dist: PyYAML>=6
Requires-Dist: pytest>=7; extra == "dev"
Requires-Dist: tomli; python_version < "3.11"
"""
ENTRY_POINTS = "[console_scripts]\nk8s-backend = k8s_backend.cli.main:main\n\n[pytest11]\nx = y.z\n"


def jar_bytes(source: bytes, when: tuple[int, int, int, int, int, int]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as jar:
        jar.writestr(zipfile.ZipInfo("io/Bridge.class", when), source)
    return out.getvalue()


def make_wheel(
    path: Path,
    *,
    code: bytes = b"print('hi')\n",
    jar: bytes = b"classfile",
    when: tuple[int, int, int, int, int, int] = (2026, 1, 1, 0, 0, 0),
    record: str = "RECORD 1",
) -> Path:
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in (
            ("k8s_backend/__init__.py", code),
            ("k8s_backend/spark/jars/k8s-backend-bridge.jar", jar_bytes(jar, when)),
            ("k8s_backend-0.1.0.dist-info/METADATA", METADATA.encode()),
            ("k8s_backend-0.1.0.dist-info/entry_points.txt", ENTRY_POINTS.encode()),
            ("k8s_backend-0.1.0.dist-info/RECORD", record.encode()),
        ):
            wheel.writestr(zipfile.ZipInfo(name, when), data)
    return path


def test_the_wheel_digest_follows_content_not_timestamps_or_record(tmp_path: Path) -> None:
    base = driver_layer.wheel_digest(make_wheel(tmp_path / "a.whl"))
    later = make_wheel(tmp_path / "b.whl", when=(2026, 12, 7, 6, 0, 0), record="RECORD 2")
    assert driver_layer.wheel_digest(later) == base
    assert driver_layer.wheel_digest(make_wheel(tmp_path / "c.whl", code=b"print('ho')\n")) != base
    assert driver_layer.wheel_digest(make_wheel(tmp_path / "d.whl", jar=b"other classfile")) != base


def test_requirements_leave_out_pyspark_and_extras_and_keep_markers(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "k8s_backend-0.1.0-py3-none-any.whl")
    assert driver_layer.requirements(wheel) == [
        "kubernetes<40,>=30",
        "PyYAML>=6",
        'tomli; python_version < "3.11"',
    ]
    assert driver_layer.console_scripts(wheel) == {"k8s-backend": "k8s_backend.cli.main:main"}


def test_pip_selects_wheels_for_debian_12s_python3_not_this_interpreter() -> None:
    args = driver_layer.target_args("amd64")
    assert args[args.index("--python-version") + 1] == "3.11"
    assert "cp311" in args and "--only-binary=:all:" in args
    platforms = [args[i + 1] for i, arg in enumerate(args) if arg == "--platform"]
    assert platforms[0] == "manylinux_2_36_x86_64" and "manylinux_2_17_x86_64" in platforms
    assert "manylinux_2_37_x86_64" not in platforms  # newer than Debian 12's glibc
    assert driver_layer.target_args("arm64")[-1].endswith("_aarch64")


def layer_of(target: Path, tmp_path: Path) -> dict[str, tarfile.TarInfo]:
    layer = tmp_path / "layer.tar"
    driver_layer.write_layer(target, {"k8s-backend": "k8s_backend.cli.main:main"}, layer)
    with tarfile.open(layer) as archive:
        return {member.name: member for member in archive.getmembers()}


def test_the_layer_is_the_images_dist_packages_readable_by_the_spark_user(tmp_path: Path) -> None:
    target = tmp_path / "target"
    (target / "k8s_backend" / "__pycache__").mkdir(parents=True)
    (target / "k8s_backend" / "__init__.py").write_text("")
    (target / "k8s_backend" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"")
    (target / "bin").mkdir()
    (target / "bin" / "k8s-backend").write_text("#!/work/venv/bin/python\n")  # pip's, for this machine
    (target / "yaml").mkdir()
    (target / "yaml" / "_yaml.so").write_bytes(b"\x7fELF")
    (target / "yaml" / "_yaml.so").chmod(0o700)
    members = layer_of(target, tmp_path)
    site = "usr/local/lib/python3.11/dist-packages"
    assert f"{site}/k8s_backend/__init__.py" in members
    assert not [name for name in members if "__pycache__" in name or name.endswith(".pyc")]
    assert not [name for name in members if name.startswith(f"{site}/bin")]
    assert all(m.uid == 0 and m.gid == 0 for m in members.values())
    assert all(m.mode & 0o005 == 0o005 for m in members.values() if m.isdir())
    assert members[f"{site}/yaml/_yaml.so"].mode == 0o755
    assert members[f"{site}/k8s_backend/__init__.py"].mode == 0o644
    script = members["usr/local/bin/k8s-backend"]
    assert script.mode == 0o755
    with tarfile.open(tmp_path / "layer.tar") as archive:
        handle = archive.extractfile(script)
        assert handle is not None
        text = handle.read().decode()
    assert text.startswith("#!/usr/bin/python3\n")
    assert "from k8s_backend.cli.main import main" in text and "sys.exit(main())" in text


def test_the_pythonpath_names_spark_python_and_its_py4j(tmp_path: Path) -> None:
    lib = tmp_path / "python" / "lib"
    lib.mkdir(parents=True)
    (lib / "pyspark.zip").write_bytes(b"")
    with pytest.raises(driver_layer.BuildError, match="py4j"):
        driver_layer.driver_pythonpath(tmp_path)
    (lib / "py4j-0.10.9.9-src.zip").write_bytes(b"")
    assert driver_layer.driver_pythonpath(tmp_path) == (
        "/opt/spark/python:/opt/spark/python/lib/py4j-0.10.9.9-src.zip"
    )


def test_a_cached_driver_layer_is_reused_until_what_the_wheel_installs_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = [b"print('hi')\n"]
    installs: list[Path] = []

    def build_wheel(root: Path, out_dir: Path, environ: object) -> Path:
        out_dir.mkdir(parents=True)
        return make_wheel(out_dir / "k8s_backend-0.1.0-py3-none-any.whl", code=code[0])

    def install(wheel: Path, target: Path, work: Path, environ: object, arch: str) -> list[str]:
        installs.append(wheel)
        (target / "k8s_backend").mkdir(parents=True)
        (target / "k8s_backend" / "__init__.py").write_bytes(code[0])
        return ["k8s_backend-0.1.0"]

    monkeypatch.setattr(driver_layer, "build_wheel", build_wheel)
    monkeypatch.setattr(driver_layer, "install", install)
    builder = ImageBuilder(cache_dir=tmp_path / "cache", progress=lambda line: None)
    first = builder._driver_layer(tmp_path)
    assert builder._driver_layer(tmp_path) == first and len(installs) == 1
    code[0] = b"print('changed')\n"
    second = builder._driver_layer(tmp_path)
    assert second != first and second.exists() and len(installs) == 2
    assert second.name.startswith("driver-")
    assert not list((tmp_path / "cache" / "build").iterdir())  # the work directories are gone


def test_the_build_command_prints_a_line_for_the_driver_image_or_says_why_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from k8s_backend.local.node import __main__ as node_main
    from k8s_backend.local.node import images
    from k8s_backend.local.node.oci import ImageConfig, OciImage

    layer = tmp_path / "layer.tar"
    layer.write_bytes(b"\0" * 2048)

    def image(name: str) -> OciImage:
        return OciImage(f"docker.io/k8s-backend/{name}:1", (layer,), ImageConfig())

    failure: list[Exception] = []

    def driver(self: ImageBuilder) -> OciImage:
        if failure:
            raise failure[0]
        return image("driver")

    monkeypatch.setattr(images, "have_image_tools", lambda: None)
    monkeypatch.setattr(ImageBuilder, "pause", lambda self: image("pause"))
    monkeypatch.setattr(ImageBuilder, "spark", lambda self: image("spark"))
    monkeypatch.setattr(ImageBuilder, "driver", driver)
    assert node_main.build_images(optional=False) == 0
    assert "docker.io/k8s-backend/driver:1: 1 layers" in capsys.readouterr().out
    failure.append(driver_layer.BuildError("pip download of k8s_backend's requirements failed"))
    assert node_main.build_images(optional=True) == 0
    assert "skipped: the driver image: pip download" in capsys.readouterr().err
    assert node_main.build_images(optional=False) == 1
    assert "error: the driver image: pip download" in capsys.readouterr().err
