"""Every ``python`` snippet the README and the docs show, run as a user would: the code taken from the
page (``<!-- snippet: NAME -->``), in a fresh Python process, against the cluster it expects. The main
job (``tox -e demo``) runs here too, as tox.ini's demo environment runs it."""

from __future__ import annotations

import configparser
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from docs_blocks import ROOT, snippet

from k8s_backend.kube.port import PODS
from k8s_backend.local import LocalCluster

pytest_plugins = ("pytester",)


def run_code(code: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    """Run ``code`` in a fresh interpreter; its stdout, or the test fails with its output."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        pytest.fail(
            f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr (tail):\n{result.stderr[-6000:]}"
        )
    return result.stdout


@pytest.mark.http
def test_the_backend_snippet_runs_against_the_kubeconfigs_cluster(tmp_path: Path) -> None:
    # api=None: the official client from the kubeconfig, here a local cluster's (pods without processes).
    with LocalCluster(run_processes=False) as cluster:
        output = run_code(snippet("readme-backend"), tmp_path, {"KUBECONFIG": str(cluster.kubeconfig)})
        verbs = {(call.verb, call.resource_plural) for call in cluster.fake.calls}
        live = cluster.fake.objects(PODS, "default")
    # status() as printed: the application the snippet named, running, with the target it asked for
    assert "'app_id': 'spark-1234', 'state': 'running'" in output, output
    assert "'targets': {0: 8}" in output, output
    # it went through the kubeconfig's cluster, and stop() cleaned up behind it
    assert {
        ("create", "leases"),
        ("watch", "pods"),
        ("delete_collection", "pods"),
        ("delete", "leases"),
    } <= verbs
    assert live == []


@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_the_pyspark_snippet_runs_on_an_embedded_local_cluster(tmp_path: Path) -> None:
    output = run_code(snippet("readme-pyspark"), tmp_path)
    assert "499500" in output.split()


@pytest.mark.real
@pytest.mark.timeout(900)
def test_the_kubeconfig_session_snippet_runs_on_a_real_control_plane(tmp_path: Path) -> None:
    from k8s_backend.local.control_plane import ControlPlaneBuilder

    # Never a build of its own here (10 minutes, and another run may be building the same cache): the
    # test command builds the control plane first (`tox -e py`), tests/real's fixtures build it too.
    if ControlPlaneBuilder().cached() is None:
        pytest.skip("the control plane is not built: python -m k8s_backend.local.control_plane build")
    job = "\nprint('SUM', spark.sparkContext.parallelize(range(100), 2).sum())\nspark.stop()\n"
    with LocalCluster(control_plane="kubernetes") as cluster:
        output = run_code(
            snippet("kubeconfig-session") + job, tmp_path, {"KUBECONFIG": str(cluster.kubeconfig)}
        )
    assert "SUM 4950" in output


@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_the_main_job_runs_as_tox_runs_it(tmp_path: Path) -> None:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "tox.ini", encoding="utf-8")
    command = shlex.split(parser["testenv:demo"]["commands"].replace("{posargs}", "").strip())
    assert command[:2] == ["python", "examples/demo.py"], command
    result = subprocess.run(
        [sys.executable, *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=800, check=False
    )
    assert result.returncode == 0, result.stderr[-6000:]
    assert "Pi is roughly 3.1" in result.stdout
    assert "Executor pods on pyk8s://local" in result.stdout


@pytest.mark.e2e
def test_the_pytest_plugin_example_passes_as_the_page_runs_it(pytester: pytest.Pytester) -> None:
    # The page's test module and command line, run in a fresh pytest process with the installed plugin.
    page = (ROOT / "docs" / "pytest-plugin.md").read_text(encoding="utf-8")
    command = next(line for line in page.splitlines() if line.startswith("pytest --pyk8s"))
    pytester.makepyfile(test_etl=snippet("pytest-plugin-example"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *shlex.split(command)[1:], timeout=800)
    text = "\n".join(result.outlines + result.errlines)
    assert result.ret == 0, text[-8000:]
    result.assert_outcomes(passed=3)


def test_the_roll_policy_hook_example_picks_the_executor_with_the_most_gc(tmp_path: Path) -> None:
    check = """
from datetime import datetime
from k8s_backend.lifecycle.roll_policy import ExecutorSummary, choose

t = datetime(2026, 1, 1)
calm = ExecutorSummary(id="1", add_time=t, total_gc_time=1_000)
busy = ExecutorSummary(id="2", add_time=t, total_gc_time=90_000)
print("CHOSEN", choose([calm, busy], longest_gc), choose([calm], longest_gc))
"""
    output = run_code(snippet("roll-policy-hook") + check, tmp_path)
    assert "CHOSEN 2 None" in output
