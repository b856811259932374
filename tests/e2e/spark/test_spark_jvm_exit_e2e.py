"""What the driver JVM prints while it exits reaches the Python process's stderr before that process
exits (the JVM ends on the end of its stdin, which used to happen only once Python had gone, with no one
left to read what it printed): a library user's script that readied the JVM and returns."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from real_backend_support import FAST_JVM

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

SCRIPT = textwrap.dedent(
    """
    import sys
    from k8s_backend.spark.session import prepare

    prepare("pyk8s://local", {"spark.driver.extraJavaOptions": sys.argv[1]})
    print("READY", flush=True)
    """
)


def test_the_jvms_exit_output_is_written_before_python_exits() -> None:
    # -Xlog's heap summary at exit is the very last thing the JVM prints.
    options = f"{FAST_JVM} -Xlog:gc+heap+exit=info:stderr"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, options], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "READY" in done.stdout
    assert "[gc,heap,exit] Heap" in done.stderr, done.stderr[-4000:]
