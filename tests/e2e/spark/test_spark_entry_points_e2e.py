"""Every way a PySpark user starts a context, with a ``pyk8s://local`` master, in fresh Python processes:
the SparkContext constructor (master positional or keyword, no conf), ``SparkConf().setMaster``, the
builder's ``master`` and ``config("spark.master", ...)``, ``PYSPARK_SUBMIT_ARGS``, the interactive
``pyspark --master`` shell (through a pty), a notebook-style kernel that starts and stops several
sessions, and pyspark's own ``spark-submit`` (which cannot work: it rejects the master before Python
runs; ``k8s-backend submit`` is the command that does).

Each context runs a job, and after its ``stop()`` no pod or executor process of it is left on the
process's warm local cluster, which all contexts of a process share.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from repo import REPO_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

ROOT = REPO_ROOT
PTH = ROOT / "k8s_backend" / "spark" / "k8s_backend_pyspark.pth"
BIN = Path(sys.executable).parent

# Shared by the scripts below: one job per context, then what is left on the warm cluster.
PRELUDE = """
import time
from k8s_backend.kube.port import PODS
from k8s_backend.local.warm import process_pool

def check(sc, label):
    status = sc._jsc.sc()
    deadline = time.monotonic() + 300
    while status.getExecutorMemoryStatus().size() - 1 < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    total = sc.parallelize(range(100), 2).sum()
    print("RAN", label, sc.master, total, flush=True)
    sc.stop()
    cluster = process_pool().cluster
    pods = len(cluster.fake.list(PODS, None).items)
    processes = len(cluster.kubelet.processes())
    print("LEFT", label, pods, processes, "clusters", process_pool().started, flush=True)
"""

CONSTRUCTORS = """
import k8s_backend.spark
from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

def conf():
    return SparkConf().set("spark.executor.instances", "1").set("spark.ui.enabled", "false")

check(SparkContext("pyk8s://local", "positional"), "positional")
check(SparkContext(master="pyk8s://local", appName="keyword", conf=conf()), "keyword")
check(SparkContext(conf=conf().setMaster("pyk8s://local").setAppName("setMaster")), "setMaster")
builder = SparkSession.builder.master("pyk8s://local").config("spark.executor.instances", "1")
check(builder.config("spark.ui.enabled", "false").getOrCreate().sparkContext, "builder.master")
builder = SparkSession.builder.config("spark.master", "pyk8s://local")
check(builder.config("spark.ui.enabled", "false").getOrCreate().sparkContext, "builder.config")
"""


def run_python(
    script: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 800
) -> subprocess.CompletedProcess[str]:
    path = cwd / "driver.py"
    path.write_text(textwrap.dedent(PRELUDE) + textwrap.dedent(script))
    result = subprocess.run(
        [sys.executable, str(path)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=dict(os.environ, **(env or {})),
    )
    if result.returncode != 0:
        pytest.fail(f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr[-6000:]}")
    return result


def assert_ran_and_left_nothing(stdout: str, labels: list[str]) -> None:
    lines = stdout.splitlines()
    for label in labels:
        assert f"RAN {label} pyk8s://local 4950" in lines, stdout
        # No pod and no executor process of a stopped context; one cluster for all of them.
        assert f"LEFT {label} 0 0 clusters 1" in lines, stdout


def test_the_constructor_setmaster_and_the_builder_take_pyk8s_in_one_process(tmp_path: Path) -> None:
    result = run_python(CONSTRUCTORS, tmp_path)
    assert_ran_and_left_nothing(
        result.stdout, ["positional", "keyword", "setMaster", "builder.master", "builder.config"]
    )


def test_pyspark_submit_args_name_the_master(tmp_path: Path) -> None:
    script = """
    import k8s_backend.spark
    from pyspark.sql import SparkSession

    check(SparkSession.builder.getOrCreate().sparkContext, "submit-args")
    """
    args = "--master pyk8s://local --conf spark.executor.instances=1 --conf spark.ui.enabled=false"
    args += " pyspark-shell"
    result = run_python(script, tmp_path, env={"PYSPARK_SUBMIT_ARGS": args})
    assert_ran_and_left_nothing(result.stdout, ["submit-args"])


NOTEBOOK_CELLS = [
    "import k8s_backend.spark\nfrom pyspark.sql import SparkSession",
    "spark = SparkSession.builder.master('pyk8s://local').config('spark.executor.instances', '1')"
    ".config('spark.ui.enabled', 'false').getOrCreate()",
    "check(spark.sparkContext, 'cell-1')",
    "spark = SparkSession.builder.master('pyk8s://local').config('spark.executor.instances', '1')"
    ".config('spark.ui.enabled', 'false').getOrCreate()",
    "print('ROWS', spark.range(10).count())",
    "check(spark.sparkContext, 'cell-2')",
    "from pyspark import SparkContext\nsc = SparkContext('pyk8s://local', 'cell-3')",
    "check(sc, 'cell-3')",
]


def test_a_notebook_style_kernel_starts_and_stops_several_sessions(tmp_path: Path) -> None:
    # The cells run one by one in one long-lived interpreter, as a kernel runs them.
    script = f"""
    import code
    interpreter = code.InteractiveInterpreter(globals())
    for cell in {NOTEBOOK_CELLS!r}:
        compiled = compile(cell, "<cell>", "exec")
        interpreter.runcode(compiled)
    """
    result = run_python(script, tmp_path)
    assert "ROWS 10" in result.stdout.splitlines()
    assert_ran_and_left_nothing(result.stdout, ["cell-1", "cell-2", "cell-3"])


def read_until(fd: int, token: bytes, seen: bytearray, timeout: float = 600) -> bool:
    deadline = time.monotonic() + timeout
    while token not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the shell closed the pty
                break
            if not chunk:
                break
            seen.extend(chunk)
    return token in seen


def test_the_interactive_pyspark_shell_with_master_pyk8s_local(tmp_path: Path) -> None:
    # What a wheel install puts in site-packages (an editable install cannot): the .pth that loads the
    # hook when PYSPARK_SUBMIT_ARGS names a pyk8s:// master. Here a sitecustomize adds it as a site dir.
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / PTH.name).write_text(PTH.read_text())
    (tmp_path / "sitecustomize.py").write_text(f"import site\nsite.addsitedir({str(site_dir)!r})\n")
    env = dict(
        os.environ,
        PYTHONPATH=str(tmp_path),
        PYSPARK_PYTHON=sys.executable,
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    command = [str(BIN / "pyspark"), "--master", "pyk8s://local", "--conf", "spark.executor.instances=1"]
    leader, follower = pty.openpty()
    shell = subprocess.Popen(command, stdin=follower, stdout=follower, stderr=follower, env=env, cwd=tmp_path)
    os.close(follower)
    seen = bytearray()
    try:
        assert read_until(leader, b">>> ", seen), seen.decode(errors="replace")[-4000:]
        os.write(leader, b"print('SUM', sc.master, sc.parallelize(range(100)).sum())\n")
        assert read_until(leader, b"SUM pyk8s://local 4950", seen), seen.decode(errors="replace")[-4000:]
        os.write(leader, b"exit()\n")
        assert shell.wait(120) == 0
    finally:
        if shell.poll() is None:
            shell.kill()
            shell.wait()
        os.close(leader)
    assert b"master = pyk8s://local" in seen


def test_pysparks_own_spark_submit_rejects_pyk8s_and_k8s_backend_submit_runs_the_app(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text(
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "print('APP', spark.sparkContext.master, spark.sparkContext.parallelize(range(100)).sum())\n"
        "spark.stop()\n"
    )
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    rejected = subprocess.run(
        [str(BIN / "spark-submit"), "--master", "pyk8s://local", str(app)],
        capture_output=True, text=True, timeout=300, check=False, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert rejected.returncode != 0
    assert "Master must either be yarn or start with spark, k8s, or local" in rejected.stderr
    submitted = subprocess.run(
        [str(BIN / "k8s-backend"), "submit", "--master", "pyk8s://local", "--num-executors", "1",
         "--conf", "spark.ui.enabled=false", str(app)],
        capture_output=True, text=True, timeout=600, check=False, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr[-4000:]
    ran = [line for line in submitted.stdout.splitlines() if line.startswith("APP pyk8s://")]
    assert ran and ran[0].endswith(" 4950"), submitted.stdout
