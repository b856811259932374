"""``spark.kubernetes.file.upload.path`` with a Hadoop URI: ``k8s-backend submit --deploy-mode cluster``
uploads through Hadoop's FileSystem in a real JVM of Spark's classpath, configured by ``spark.hadoop.*``.
The scheme is ``viewfs://`` (not ``file``), its mount table mapping it onto a local directory, so the
files can be seen; the cluster is a FakeKubernetes and the command does not wait for the driver."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cli_support import IMAGE, cli

from k8s_backend.cli.common.properties import parse_properties
from k8s_backend.kube.port import CONFIG_MAPS, PODS
from k8s_backend.spark.hadoop_fs import HadoopFileSystem
from k8s_backend.testing import FakeKubernetes

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

MOUNT = "spark.hadoop.fs.viewfs.mounttable.test.link./uploads"


def test_cluster_mode_uploads_through_hadoops_file_system_and_the_driver_gets_uris(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("print('hi')\n")
    (tmp_path / "env.tar.gz").write_bytes(b"\x1f\x8b archive")
    shared = tmp_path / "shared"
    shared.mkdir()
    fake = FakeKubernetes()
    argv = [
        "submit", "--master", "pyk8s://https://k8s.test:6443", "--deploy-mode", "cluster", "--conf", IMAGE,
        "--conf", f"{MOUNT}=file://{shared}",
        "--conf", "spark.kubernetes.file.upload.path=viewfs://test/uploads",
        "--conf", "spark.kubernetes.submission.waitAppCompletion=false",
        "--archives", f"{tmp_path}/env.tar.gz#environment",
        str(tmp_path / "app.py"),
    ]  # fmt: skip
    result = cli(argv, fake)
    assert result.code == 0, result.err
    (directory,) = shared.iterdir()
    names = sorted(p.name for p in directory.iterdir() if not p.name.endswith(".crc"))  # Hadoop's checksums
    assert names == ["app.py", "env.tar.gz"]
    assert (directory / "env.tar.gz").read_bytes() == b"\x1f\x8b archive"
    uri = f"viewfs://test/uploads/{directory.name}"
    (pod,) = fake.objects(PODS)
    assert pod["spec"]["containers"][0]["args"][-1] == f"{uri}/app.py"
    (config_map,) = fake.objects(CONFIG_MAPS)
    props = parse_properties(config_map["data"]["spark.properties"])
    assert props["spark.archives"] == f"{uri}/env.tar.gz#environment"
    assert props[MOUNT] == f"file://{shared}"  # the driver reads the URIs with the same settings


def test_the_jvm_file_system_checks_copies_and_deletes(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (tmp_path / "a.txt").write_text("a\n")
    fs = HadoopFileSystem.launch({MOUNT: f"file://{shared}"})
    try:
        assert fs.is_directory("viewfs://test/uploads")
        with pytest.raises(FileNotFoundError):
            fs.is_directory("viewfs://test/uploads/nothere")
        fs.copy_from_local(str(tmp_path / "a.txt"), "viewfs://test/uploads/d/a.txt")
        assert (shared / "d" / "a.txt").read_text() == "a\n"
        fs.delete("viewfs://test/uploads/d")
        assert not (shared / "d").exists()
        with pytest.raises(FileNotFoundError):
            fs.delete("viewfs://test/uploads/d")
    finally:
        fs.close()


class Runtime:
    """A driver that runs nothing of Spark: the script runs in this process, as client mode runs it."""

    def prepare(self, master: str, properties: object) -> None:
        self.properties = properties

    def failure(self) -> str | None:
        return None

    def stop(self) -> None:
        pass


def test_client_mode_fetches_a_remote_application_and_py_files_with_hadoop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # What the driver pod of a cluster-mode submit runs after uploading to viewfs:// (test above).
    shared = tmp_path / "shared"
    (shared / "spark-upload-1").mkdir(parents=True)
    script = "import dep, sys\nprint('FETCHED', dep.X, sys.argv[1:])\n"
    (shared / "spark-upload-1" / "app.py").write_text(script)
    (shared / "spark-upload-1" / "dep.py").write_text("X = 42\n")
    uri = "viewfs://test/uploads/spark-upload-1"
    runtime = Runtime()
    argv = [
        "submit", "--master", "pyk8s://https://k8s.test:6443", "--conf", IMAGE,
        "--conf", f"{MOUNT}=file://{shared}", "--py-files", f"{uri}/dep.py", f"{uri}/app.py", "one",
    ]  # fmt: skip
    result = cli(argv, FakeKubernetes(), runtime=runtime)
    assert result.code == 0, result.err
    assert "FETCHED 42 ['one']" in capsys.readouterr().out
    assert not any(path.endswith("dep.py") for path in sys.path)  # its temporary copy is gone again
