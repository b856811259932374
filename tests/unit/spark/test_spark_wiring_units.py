"""Factory, gateway launch, import hook, jar location and the session's helpers, without a JVM."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from k8s_backend.errors import ConfigError
from k8s_backend.spark import factory as factory_module
from k8s_backend.spark import gateway, hook, jar, javac
from k8s_backend.spark.factory import BackendFactory, backend_properties
from k8s_backend.spark.master import parse_master
from k8s_backend.spark.session import as_properties, with_master_defaults


class TinyBackend:
    def __init__(self, conf: dict[str, str], **kwargs: Any) -> None:
        self.conf = conf
        self.kwargs = kwargs
        self.stopped = False

    def application_id(self) -> str:
        return str(self.kwargs["app_id"])

    def stop(self) -> None:
        self.stopped = True


class Recorder:
    def __init__(self) -> None:
        self.made: list[TinyBackend] = []

    def __call__(self, conf: Any, **kwargs: Any) -> Any:
        backend = TinyBackend(dict(conf), **kwargs)
        self.made.append(backend)
        return backend


class FakeLocalCluster:
    def __init__(self) -> None:
        self.events: list[str] = []
        self.url = "http://127.0.0.1:4321"

    def api(self, namespace: str = "default") -> str:
        return f"api:{namespace}"

    @contextlib.contextmanager
    def __call__(self) -> Iterator[FakeLocalCluster]:
        self.events.append("start")
        try:
            yield self
        finally:
            self.events.append("stop")


CONF = {"spark.master": "pyk8s://https://h:6443", "spark.app.name": "t", "spark.driver.port": "7078"}


@pytest.fixture(autouse=True)
def _no_exit_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(factory_module, "atexit", SimpleNamespace(register=print, unregister=print))


class TestFactory:
    def test_builds_the_backend_with_the_api_server_as_k8s_master_and_a_jvm_driver(self) -> None:
        creator = Recorder()
        made = BackendFactory(creator).create("JAVA", "pyk8s://https://h:6443", json.dumps(CONF), "spark://D@h:1")
        (backend,) = creator.made
        assert backend.conf["spark.master"] == "k8s://https://h:6443"
        assert backend.kwargs["driver_url"] == "spark://D@h:1"
        assert backend.kwargs["app_id"].startswith("spark-") and len(backend.kwargs["app_id"]) == 38
        assert backend.kwargs["api"] is None
        assert backend.kwargs["driver"]._java == "JAVA"
        assert made.applicationId() == backend.kwargs["app_id"]
        made.stop()

    def test_spark_app_id_wins(self) -> None:
        creator = Recorder()
        conf = dict(CONF, **{"spark.app.id": "my-app"})
        BackendFactory(creator).create("J", CONF["spark.master"], json.dumps(conf), "u").stop()
        assert creator.made[0].kwargs["app_id"] == "my-app"

    def test_default_master_leaves_the_api_server_to_kubeconfig(self) -> None:
        creator = Recorder()
        conf = json.dumps(dict(CONF, **{"spark.master": "pyk8s://"}))
        BackendFactory(creator).create("J", "pyk8s://", conf, "u")
        assert "spark.master" not in creator.made[0].conf

    def test_local_master_runs_a_cluster_for_the_backend_and_stops_it_after(self) -> None:
        creator, cluster = Recorder(), FakeLocalCluster()
        conf = dict(CONF, **{"spark.master": "pyk8s://local", "spark.kubernetes.namespace": "ns"})
        factory = BackendFactory(creator, local_cluster=cluster)
        made = factory.create("J", "pyk8s://local", json.dumps(conf), "u")
        backend = creator.made[0]
        assert backend.kwargs["api"] == "api:ns"
        assert backend.conf["spark.master"] == "k8s://http://127.0.0.1:4321"
        assert cluster.events == ["start"] and factory.local is cluster
        made.stop()
        assert backend.stopped and cluster.events == ["start", "stop"] and factory.local is None

    def test_a_backend_no_context_stopped_is_stopped_as_a_leftover_once(self) -> None:
        # A SparkContext that failed to start (or a signal during getOrCreate) never calls stop():
        # the driver's exit path stops the backend, so its executor pods are deleted.
        creator, cluster = Recorder(), FakeLocalCluster()
        factory = BackendFactory(creator, local_cluster=cluster)
        factory.stop_leftover()  # nothing made yet: nothing to do
        factory.create("J", "pyk8s://local", json.dumps(CONF), "u")
        (backend,) = creator.made
        assert not backend.stopped
        factory.stop_at_exit()
        assert backend.stopped and cluster.events == ["start", "stop"]
        backend.stopped = False
        factory.stop_leftover()
        assert not backend.stopped, "a backend that stopped is not stopped again"

    def test_a_failing_backend_is_reported_and_its_local_cluster_stopped(self) -> None:
        cluster = FakeLocalCluster()

        def broken(conf: Any, **kwargs: Any) -> Any:
            raise ConfigError("spark.executor.cores='x' is not a number", key="spark.executor.cores")

        factory = BackendFactory(broken, local_cluster=cluster)
        with pytest.raises(ConfigError):
            factory.create("J", "pyk8s://local", json.dumps(CONF), "u")
        assert isinstance(factory.last_error, ConfigError)
        assert cluster.events == ["start", "stop"]

    def test_backend_properties_keep_everything_else(self) -> None:
        props = backend_properties({"spark.master": "pyk8s://", "a": "1"}, parse_master("pyk8s://"))
        assert props == {"a": "1"}


class TestGatewayLaunch:
    def test_the_master_stays_out_and_the_jar_goes_first_on_the_classpath(self) -> None:
        jar_path = Path("/x/bridge.jar")
        props = gateway.launch_properties(
            {"spark.master": "pyk8s://local", "spark.driver.extraClassPath": "/a.jar", "k": "v"}, jar_path
        )
        assert "spark.master" not in props
        assert props["spark.driver.extraClassPath"] == os.pathsep.join(["/x/bridge.jar", "/a.jar"])
        assert props["k"] == "v"
        again = gateway.launch_properties(props, jar_path)
        assert again["spark.driver.extraClassPath"] == props["spark.driver.extraClassPath"]


class FakeConf:
    """pyspark's SparkConf before the JVM exists: a dict behind get/setIfMissing/getAll."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = dict(values)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    def setIfMissing(self, key: str, value: str) -> None:
        self.values.setdefault(key, value)

    def getAll(self) -> list[tuple[str, str]]:
        return list(self.values.items())


class TestImportHook:
    @pytest.fixture
    def launches(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
        calls: list[Any] = []
        context = hook._context_module()

        def original(conf: Any = None, popen_kwargs: Any = None) -> str:
            calls.append(("pyspark", conf))
            return "pyspark-gateway"

        monkeypatch.setattr(context, "launch_gateway", original)  # restored with the real hook after
        monkeypatch.setattr(context.SparkContext, "__init__", context.SparkContext.__init__)  # likewise
        monkeypatch.setattr(hook, "bridge_jar", lambda: Path("/b.jar"))

        def launch(props: dict[str, str], jar_path: Path, popen_kwargs: Any = None) -> str:
            calls.append(("ours", props))
            return "gw"

        monkeypatch.setattr(hook, "launch", launch)
        def install_factory(gw: str, made: Any) -> None:
            calls.append(("factory", gw, type(made).__name__))

        monkeypatch.setattr(hook, "install_factory", install_factory)
        hook.install()
        hook.install()  # idempotent: wrapped once
        yield calls
        hook.uninstall()
        assert context.launch_gateway is original

    def test_other_masters_go_to_pyspark_unchanged(self, launches: list[Any]) -> None:
        conf = FakeConf({"spark.master": "local[2]"})
        assert hook._context_module().launch_gateway(conf) == "pyspark-gateway"
        assert launches == [("pyspark", conf)]

    def test_pyk8s_masters_get_the_bridge_and_a_factory(self, launches: list[Any]) -> None:
        conf = FakeConf({"spark.master": "pyk8s://local", "spark.driver.host": "10.1.1.1"})
        assert hook._context_module().launch_gateway(conf) == "gw"
        assert launches[0][0] == "ours" and launches[1] == ("factory", "gw", "BackendFactory")
        # Local defaults land in the context's own conf, but never over the user's values.
        assert conf.values["spark.driver.bindAddress"] == "127.0.0.1"
        assert conf.values["spark.driver.host"] == "10.1.1.1"

    def test_an_old_pyspark_without_pyspark_core_is_left_alone(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def missing() -> Any:
            raise ModuleNotFoundError("No module named 'pyspark.core'")

        monkeypatch.setattr(hook, "_context_module", missing)
        hook.install()
        hook.uninstall()
        assert not hook.is_installed()

    def test_the_import_installs_it(self) -> None:
        import k8s_backend.spark  # noqa: F401

        assert hook.is_installed()


def write_jar(path: Path, **info: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(javac.BUILD_INFO, "".join(f"{k}={v}\n" for k, v in info.items()))
    return path


PYSPARK = jar.PysparkInstall(version="4.3.0", scala_version="2.13", jars_dir=Path("/nowhere"))


class TestJarLocation:
    @pytest.mark.parametrize(("version", "scala"), [("3.5.1", "2.12"), ("5.0.0", "2.13"), ("4.0.0", "2.12")])
    def test_unsupported_pyspark_is_named_with_the_fix(self, version: str, scala: str) -> None:
        with pytest.raises(jar.UnsupportedPysparkError) as info:
            jar.check_supported(version, scala)
        assert f"pyspark {version} (Scala {scala})" in str(info.value)
        assert "pip install 'pyspark>=4,<5'" in str(info.value)

    def test_usable_means_same_scala_line_major_version_and_sources(self, tmp_path: Path) -> None:
        good = write_jar(tmp_path / "a.jar", sparkVersion="4.1.0", scalaVersion="2.13", sourceDigest="d1")
        assert jar.is_usable(good, PYSPARK, "d1")
        assert not jar.is_usable(good, PYSPARK, "d2")
        assert jar.is_usable(good, PYSPARK, None)
        other = write_jar(tmp_path / "b.jar", sparkVersion="3.5.1", scalaVersion="2.12", sourceDigest="d1")
        assert not jar.is_usable(other, PYSPARK, "d1")
        assert not jar.is_usable(tmp_path / "missing.jar", PYSPARK, "d1")

    @pytest.fixture
    def isolated(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
        monkeypatch.setattr(jar, "installed_pyspark", lambda: PYSPARK)
        monkeypatch.setattr(jar, "PACKAGED_JAR", tmp_path / "pkg" / javac.JAR_NAME)
        monkeypatch.setenv(jar.CACHE_ENV, str(tmp_path / "cache"))
        monkeypatch.setattr(javac, "source_digest", lambda source_dir=None: "cur")
        return tmp_path

    def test_without_a_jdk_or_jar_the_error_says_what_to_install(
        self, isolated: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(javac, "find_javac", lambda: None)
        with pytest.raises(jar.BridgeJarError) as info:
            jar.bridge_jar()
        assert "install a JDK 17 or newer" in str(info.value)

    def test_packaged_jar_first_then_cache_then_a_build(
        self, isolated: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        built: list[Path] = []

        def fake_build(output: Path, jars_dir: Path, **kw: Any) -> Path:
            built.append(output)
            return write_jar(output, sparkVersion="4.3.0", scalaVersion="2.13", sourceDigest="cur")

        monkeypatch.setattr(javac, "find_javac", lambda: Path("/usr/bin/javac"))
        monkeypatch.setattr(javac, "build_jar", fake_build)
        first = jar.bridge_jar()
        assert first.is_relative_to(isolated / "cache") and built == [first]
        assert jar.bridge_jar() == first and len(built) == 1  # cached
        packaged = write_jar(jar.PACKAGED_JAR, sparkVersion="4.3.0", scalaVersion="2.13", sourceDigest="cur")
        assert jar.bridge_jar() == packaged

    def test_a_stale_packaged_jar_serves_when_nothing_can_be_built(
        self, isolated: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(javac, "find_javac", lambda: None)
        stale = write_jar(jar.PACKAGED_JAR, sparkVersion="4.3.0", scalaVersion="2.13", sourceDigest="old")
        assert jar.bridge_jar() == stale


class TestJavac:
    def test_spark_version_from_the_core_jar_name(self, tmp_path: Path) -> None:
        (tmp_path / "spark-core_2.13-4.3.0.jar").touch()
        assert javac.spark_version_of(tmp_path) == ("4.3.0", "2.13")
        assert javac.spark_version_of(tmp_path / "none") is None

    def test_source_digest_follows_the_sources(self, tmp_path: Path) -> None:
        (tmp_path / "A.java").write_text("class A {}")
        before = javac.source_digest(tmp_path)
        (tmp_path / "A.java").write_text("class A { }")
        assert javac.source_digest(tmp_path) != before

    def test_build_without_javac_names_the_jdk(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(javac, "find_javac", lambda: None)
        with pytest.raises(javac.JarBuildError) as info:
            javac.build_jar(tmp_path / "x.jar", tmp_path)
        assert "no javac was found" in str(info.value) and "openjdk" in str(info.value)

    def test_build_against_a_folder_without_spark(self, tmp_path: Path) -> None:
        with pytest.raises(javac.JarBuildError) as info:
            javac.build_jar(tmp_path / "x.jar", tmp_path, javac=Path("/usr/bin/javac"))
        assert "pyspark>=4,<5" in str(info.value)


class TestSessionRefusesUnsupportedPyspark:
    def test_before_anything_starts(self, monkeypatch: pytest.MonkeyPatch) -> None:
        session_module = sys.modules["k8s_backend.spark.session"]  # the package's session() shadows it

        def old() -> Any:
            jar.check_supported("3.5.1", "2.12")

        monkeypatch.setattr(session_module, "installed_pyspark", old)
        for start in (session_module.session, session_module.prepare):
            with pytest.raises(jar.UnsupportedPysparkError, match=r"pyspark 3\.5\.1 \(Scala 2\.12\)"):
                start("pyk8s://local")


class TestSessionHelpers:
    def test_properties_from_a_mapping_or_a_sparkconf(self) -> None:
        assert as_properties({"a": 1}) == {"a": "1"}
        assert as_properties(FakeConf({"b": "2"})) == {"b": "2"}
        assert as_properties(None) == {}
        with pytest.raises(TypeError, match="SparkConf"):
            as_properties(42)

    def test_local_masters_get_driver_defaults_unless_set(self) -> None:
        props = with_master_defaults("pyk8s://local", {"spark.driver.host": "h"})
        assert props["spark.driver.host"] == "h"
        assert props["spark.driver.bindAddress"] == "127.0.0.1"
        assert props["spark.kubernetes.container.image"].startswith("apache/spark:")
        assert with_master_defaults("pyk8s://", {}) == {}
