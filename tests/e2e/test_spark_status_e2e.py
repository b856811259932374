"""``k8s_backend.spark.status(spark)`` reaches the backend of a session k8s_backend made, and says
clearly when a session is not one (another master, or stopped)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

DRIVER = """
import threading
from k8s_backend.spark import session, status

spark = session("pyk8s://local", {"spark.executor.instances": "2", "spark.ui.enabled": "false",
                                  "spark.executor.memory": "512m"})
print("SUM", spark.sparkContext.parallelize(range(100), 2).sum())
report = status(spark)
print("APP", report["app_id"] == spark.sparkContext.applicationId)
print("TARGET", report["allocator"]["targets"])
print("HISTORIES", len(report["executors"]["histories"]))
app = spark.sparkContext
spark.stop()
try:
    status(app)
except ValueError as error:
    print("STOPPED", "no running k8s_backend backend" in str(error))
"""


def test_status_of_a_session_and_of_a_stopped_one(tmp_path: Path) -> None:
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(DRIVER))
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=800, check=False
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr[-5000:]}"
    lines = done.stdout.splitlines()
    assert "SUM 4950" in lines
    assert "APP True" in lines
    assert "TARGET {'0': 2}" in lines or "TARGET {0: 2}" in lines
    assert "HISTORIES 2" in lines
    assert "STOPPED True" in lines


def test_a_session_of_another_master_is_refused_with_the_reason() -> None:
    from k8s_backend.spark import status

    class Context:
        master = "local[2]"
        applicationId = "local-1"

    with pytest.raises(ValueError, match=r"master is 'local\[2\]'.*pyk8s://"):
        status(Context())
