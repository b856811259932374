"""setup.py's jar step: build when it can, ship a prebuilt jar, else fail saying what to install."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from repo import REPO_ROOT

SETUP = REPO_ROOT / "setup.py"


@pytest.fixture
def setup_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("k8s_backend_setup_under_test", SETUP)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # not __main__: setup() does not run
    return module


def command(module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **javac: Any) -> Any:
    from setuptools import Distribution  # type: ignore[import-untyped,unused-ignore]

    real = module.load_javac_module()
    fake = SimpleNamespace(
        find_javac=javac.get("find_javac", lambda: None),
        find_pyspark_jars=javac.get("find_pyspark_jars", lambda: None),
        build_jar=javac.get("build_jar", real.build_jar),
        JarBuildError=real.JarBuildError,
        JDK_HINT=real.JDK_HINT,
    )
    monkeypatch.setattr(module, "load_javac_module", lambda: fake)
    monkeypatch.setattr(module, "HERE", tmp_path / "src")
    cmd = module.BuildPyWithBridgeJar(Distribution())
    cmd.build_lib = str(tmp_path / "build")
    return cmd


def test_no_jdk_and_no_prebuilt_jar_fails_naming_the_jdk(
    setup_module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from setuptools.errors import SetupError  # type: ignore[import-untyped,unused-ignore]

    cmd = command(setup_module, tmp_path, monkeypatch)
    with pytest.raises(SetupError) as info:
        cmd.build_bridge_jar()
    assert "no javac was found" in str(info.value) and "openjdk-17-jdk-headless" in str(info.value)


def test_no_jdk_but_a_prebuilt_jar_ships_it(
    setup_module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prebuilt = tmp_path / "src" / setup_module.JAR
    prebuilt.parent.mkdir(parents=True)
    prebuilt.write_bytes(b"jar")
    command(setup_module, tmp_path, monkeypatch).build_bridge_jar()  # no error


def test_javac_without_a_visible_pyspark_defers_the_build_to_first_use(
    setup_module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cmd = command(setup_module, tmp_path, monkeypatch, find_javac=lambda: Path("/usr/bin/javac"))
    cmd.build_bridge_jar()
    assert not (tmp_path / "build" / setup_module.JAR).exists()


def test_javac_and_pyspark_build_into_the_build_tree_or_the_source_tree_when_editable(
    setup_module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[Path] = []
    cmd = command(
        setup_module,
        tmp_path,
        monkeypatch,
        find_javac=lambda: Path("/usr/bin/javac"),
        find_pyspark_jars=lambda: Path("/site/pyspark/jars"),
        build_jar=lambda target, jars, javac: built.append(target),
    )
    cmd.build_bridge_jar()
    cmd.editable_mode = True
    cmd.build_bridge_jar()
    assert built == [tmp_path / "build" / setup_module.JAR, tmp_path / "src" / setup_module.JAR]
