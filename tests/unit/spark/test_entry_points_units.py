"""Where the gateway hook finds a pyk8s:// master (the SparkContext argument, PYSPARK_SUBMIT_ARGS), without
a JVM: pyspark's launch and ours are replaced by recorders."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from k8s_backend.spark import entry_points, hook


class FakeConf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = dict(values)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    def setIfMissing(self, key: str, value: str) -> None:
        self.values.setdefault(key, value)

    def getAll(self) -> list[tuple[str, str]]:
        return list(self.values.items())


@pytest.mark.parametrize(
    ("args", "master", "rest"),
    [
        ("--master pyk8s://local pyspark-shell", "pyk8s://local", "pyspark-shell"),
        ('"--master" "pyk8s://local" "--name" "PySparkShell" "pyspark-shell"', "pyk8s://local",
         "--name PySparkShell pyspark-shell"),
        ("--master=pyk8s://https://h:6443 --conf a=1 pyspark-shell", "pyk8s://https://h:6443",
         "--conf a=1 pyspark-shell"),
        ("--conf spark.master=pyk8s:// --conf b=2 pyspark-shell", "pyk8s://", "--conf b=2 pyspark-shell"),
        ("--master local[2] pyspark-shell", None, "--master local[2] pyspark-shell"),
        ("--master k8s://https://h pyspark-shell", None, "--master k8s://https://h pyspark-shell"),
        ("", None, ""),
        ('--name "unclosed', None, '--name "unclosed'),  # pyspark's own launch reports it
    ],
)  # fmt: skip
def test_submit_args_master_takes_out_a_pyk8s_master_only(args: str, master: str | None, rest: str) -> None:
    assert entry_points.submit_args_master(args) == (master, rest)


def test_the_given_master_is_per_thread_and_nested() -> None:
    seen: list[str | None] = []
    with entry_points.master_given("pyk8s://local"):
        other = threading.Thread(target=lambda: seen.append(entry_points.given_master()))
        other.start()
        other.join()
        with entry_points.master_given(None):
            seen.append(entry_points.given_master())
        seen.append(entry_points.given_master())
    seen.append(entry_points.given_master())
    assert seen == [None, None, "pyk8s://local", None]


class TestHookEntryPoints:
    @pytest.fixture
    def calls(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
        recorded: list[Any] = []
        context = hook._context_module()
        monkeypatch.setattr(context.SparkContext, "__init__", context.SparkContext.__init__)

        def original(conf: Any = None, popen_kwargs: Any = None) -> str:
            recorded.append(("pyspark", os.environ.get("PYSPARK_SUBMIT_ARGS")))
            return "pyspark-gateway"

        def launch(props: dict[str, str], jar_path: Path, popen_kwargs: Any = None) -> str:
            recorded.append(("ours", props, os.environ.get("PYSPARK_SUBMIT_ARGS")))
            return "gw"

        monkeypatch.setattr(context, "launch_gateway", original)
        monkeypatch.setattr(hook, "bridge_jar", lambda: Path("/b.jar"))
        monkeypatch.setattr(hook, "launch", launch)
        monkeypatch.setattr(hook, "install_factory", lambda gw, made: recorded.append(("factory", gw)))
        monkeypatch.setattr(hook, "set_default_master", lambda gw, m: recorded.append(("default", m)))
        monkeypatch.setattr(hook, "exit_on_termination", lambda: None)
        monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
        hook.uninstall()
        hook.install()
        yield recorded
        hook.uninstall()

    def test_a_master_given_to_the_constructor_launches_our_jvm_without_a_conf(
        self, calls: list[Any]
    ) -> None:
        with entry_points.master_given("pyk8s://local"):
            assert hook._context_module().launch_gateway(None) == "gw"
        kind, props, _ = calls[0]
        assert kind == "ours"
        # No conf object: the local defaults go in as the JVM's system properties.
        assert props["spark.driver.host"] == "127.0.0.1"
        assert calls[1] == ("factory", "gw")
        assert not any(call[0] == "default" for call in calls)  # the argument is not a default master

    def test_the_constructor_argument_wins_over_the_confs_master(self, calls: list[Any]) -> None:
        with entry_points.master_given("pyk8s://local"):
            hook._context_module().launch_gateway(FakeConf({"spark.master": "local[2]"}))
        assert calls[0][0] == "ours"

    def test_a_non_pyk8s_argument_goes_to_pyspark(self, calls: list[Any]) -> None:
        with entry_points.master_given("local[2]"):
            assert hook._context_module().launch_gateway(None) == "pyspark-gateway"

    def test_submit_args_master_is_taken_out_and_made_the_default(
        self, calls: list[Any], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--master pyk8s://local --conf a=1 pyspark-shell")
        assert hook._context_module().launch_gateway(None) == "gw"
        assert calls[0][0] == "ours" and calls[0][2] == "--conf a=1 pyspark-shell"  # spark-submit's view
        assert ("default", "pyk8s://local") in calls
        assert os.environ["PYSPARK_SUBMIT_ARGS"] == "--master pyk8s://local --conf a=1 pyspark-shell"

    def test_a_confs_master_wins_over_submit_args(
        self, calls: list[Any], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--master pyk8s://local pyspark-shell")
        assert (
            hook._context_module().launch_gateway(FakeConf({"spark.master": "local[1]"})) == "pyspark-gateway"
        )

    def test_a_jvm_spark_submit_started_is_used_as_is(
        self, calls: list[Any], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "12345")
        with entry_points.master_given("pyk8s://local"):
            assert hook._context_module().launch_gateway(None) == "pyspark-gateway"

    def test_the_constructor_is_wrapped_once_and_restored(self, calls: list[Any]) -> None:
        spark_context = hook._context_module().SparkContext
        wrapped = spark_context.__init__
        hook.install()
        assert spark_context.__init__ is wrapped
        original = getattr(wrapped, hook._WRAPPED)
        hook.uninstall()
        assert spark_context.__init__ is original
        hook.install()


def test_the_pth_loads_the_hook_only_for_a_pyk8s_submit_args(tmp_path: Path) -> None:
    import subprocess
    import sys

    pth = Path(hook.__file__).with_name("k8s_backend_pyspark.pth")
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / pth.name).write_text(pth.read_text())
    probe = f"import site, sys; site.addsitedir({str(site_dir)!r}); print('k8s_backend.spark' in sys.modules)"
    for args, loaded in (
        ("--master pyk8s://local pyspark-shell", "True"),
        ("--master local pyspark-shell", "False"),
    ):
        env = dict(os.environ, PYSPARK_SUBMIT_ARGS=args)
        out = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
        )
        assert out.stdout.strip() == loaded
