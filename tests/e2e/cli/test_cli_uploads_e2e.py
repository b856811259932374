"""Cluster mode with ``spark.kubernetes.file.upload.path`` on an embedded local cluster: a virtualenv
shipped with ``--archives env.tar.gz#environment`` runs the executors' Python and a package in it is
imported there; the application, ``--py-files``, ``--files`` and ``--jars`` come from the upload directory.
The upload path is a ``file://`` directory, or a ``viewfs://`` URI (written and read with Hadoop's
FileSystem, by the command, the driver and the executors) whose mount table maps it onto one."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest
from cli_support import APPS

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def build_environment(where: Path) -> Path:
    """``env.tar.gz``: a virtualenv of this interpreter with ``tinypkg`` written into its site-packages."""
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    purelib = sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)})
    package = Path(purelib) / "tinypkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 'tiny-42'\n")
    archive = where / "env.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for child in sorted(venv.iterdir()):  # the environment's content at the archive's root
            tar.add(child, arcname=child.name)
    return archive


MOUNT = "spark.hadoop.fs.viewfs.mounttable.test.link./uploads"


@pytest.mark.parametrize("scheme", ["file", "viewfs"])
def test_a_virtualenv_shipped_with_archives_runs_the_executors_python(tmp_path: Path, scheme: str) -> None:
    archive = build_environment(tmp_path)
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    (tmp_path / "helper.py").write_text("NAME = 'helper-from-py-files'\n")
    (tmp_path / "data.txt").write_text("data-from-files\n")
    with zipfile.ZipFile(tmp_path / "extra.jar", "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    app = tmp_path / "venv_check.py"
    shutil.copy(APPS / "venv_check.py", app)
    script = shutil.which("k8s-backend")
    command = [script] if script else [sys.executable, "-m", "k8s_backend.cli.main"]
    argv = [*command, "submit", "--master", "pyk8s://local", "--deploy-mode", "cluster", "--follow-log"]
    argv += [
        "--num-executors",
        "1",
        "--conf",
        "spark.executor.memory=512m",
        "--conf",
        "spark.ui.enabled=false",
    ]
    base = f"file://{uploads}" if scheme == "file" else "viewfs://test/uploads"
    argv += ["--conf", f"spark.kubernetes.file.upload.path={base}", "--conf", f"{MOUNT}=file://{uploads}"]
    argv += ["--conf", "spark.pyspark.python=./environment/bin/python"]
    argv += ["--archives", f"{archive}#environment", "--jars", str(tmp_path / "extra.jar")]
    argv += ["--py-files", str(tmp_path / "helper.py"), "--files", str(tmp_path / "data.txt")]
    done = subprocess.run(
        [*argv, str(app)], capture_output=True, text=True, timeout=800, check=False, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-6000:]
    out = done.stdout
    assert "EXECUTORS ['tiny-42:environment']" in out  # imported from the archive, by its Python
    assert "HELPER helper-from-py-files" in out and "DATA data-from-files" in out
    upload_dir = f"{base}/spark-upload-"
    if scheme == "file":
        assert f"APP {uploads}/spark-upload-" in out
    else:  # fetched by the driver pod with Hadoop's FileSystem into a directory of its own
        assert "APP " in out and "/k8s-backend-fetched-" in out
    assert f"CONF spark.archives {upload_dir}" in out and "/env.tar.gz#environment" in out
    assert f"CONF spark.jars {upload_dir}" in out
    assert f"Deleted the uploaded files in {upload_dir}" in done.stderr
    assert list(uploads.iterdir()) == []  # the driver ended: its uploads are gone
