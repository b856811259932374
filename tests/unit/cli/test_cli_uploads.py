"""``spark.kubernetes.file.upload.path``: URI rewriting, the file:// uploader, refusals, and what cluster
mode creates (on a FakeKubernetes) with and without the key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_support import IMAGE, OnWatch, cli

from k8s_backend.cli.common.errors import UsageError
from k8s_backend.cli.common.properties import parse_properties
from k8s_backend.cli.common.submit_args import parse_submit_args
from k8s_backend.cli.submit import uploads
from k8s_backend.cli.submit.submission import Submission, build_submission
from k8s_backend.kube.port import CONFIG_MAPS, PODS
from k8s_backend.spark.jvm_start import DriverStartError
from k8s_backend.testing import FakeKubernetes

KEY = "spark.kubernetes.file.upload.path"
MASTER = "pyk8s://https://k8s.test:6443"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """An application, its dependencies, and an upload directory."""
    (tmp_path / "app.py").write_text("print('hi')\n")
    (tmp_path / "dep.py").write_text("X = 1\n")
    (tmp_path / "data.txt").write_text("data\n")
    (tmp_path / "lib.jar").write_bytes(b"PK\x03\x04jar")
    (tmp_path / "env.tar.gz").write_bytes(b"\x1f\x8b archive")
    (tmp_path / "up").mkdir()
    return tmp_path


def cluster_argv(work: Path, *extra: str, upload: str | None = None) -> list[str]:
    argv = ["--master", MASTER, "--deploy-mode", "cluster", "--conf", IMAGE]
    if upload is not None:
        argv += ["--conf", f"{KEY}={upload}"]
    return [*argv, *extra, str(work / "app.py"), "10"]


def build(argv: list[str]) -> Submission:
    return build_submission(parse_submit_args(argv), {})


# -- URI rewriting ----------------------------------------------------------------------------------------


def test_local_files_are_rewritten_into_one_spark_upload_directory_and_archives_keep_their_alias(
    work: Path,
) -> None:
    base = f"file://{work}/up"
    sub = build(
        cluster_argv(
            work,
            "--jars", f"{work}/lib.jar,local:///opt/extra.jar,https://repo.example/x.jar",
            "--archives", f"{work}/env.tar.gz#environment,s3a://bucket/other.zip#other",
            "--py-files", f"{work}/dep.py",
            "--files", f"file://{work}/data.txt",
            upload=base,
        )
    )  # fmt: skip
    assert sub.uploads is not None
    directory = sub.uploads.directory
    assert directory.startswith(f"{base}/spark-upload-")
    uuid_part = directory.rsplit("spark-upload-", 1)[1]
    assert len(uuid_part) == 36  # a random UUID, as Spark names the directory
    props = sub.properties
    assert sub.app == f"{directory}/app.py"
    assert props["spark.jars"] == f"{directory}/lib.jar,local:///opt/extra.jar,https://repo.example/x.jar"
    assert props["spark.archives"] == f"{directory}/env.tar.gz#environment,s3a://bucket/other.zip#other"
    assert props["spark.submit.pyFiles"] == f"{directory}/dep.py"
    assert props["spark.files"] == f"{directory}/data.txt"
    assert {(u.source, u.target) for u in sub.uploads.uploads} == {
        (str(work / name), f"{directory}/{name}")
        for name in ("app.py", "lib.jar", "env.tar.gz", "dep.py", "data.txt")
    }
    assert f"{directory}/env.tar.gz#environment" in sub.uploads.targets


def test_a_plain_absolute_upload_path_gives_plain_paths(work: Path) -> None:
    sub = build(cluster_argv(work, upload=f"{work}/up/"))
    assert sub.uploads is not None
    assert sub.uploads.directory.startswith(f"{work}/up/spark-upload-")
    assert sub.app == f"{sub.uploads.directory}/app.py"


def test_nothing_to_upload_leaves_the_submission_alone(work: Path) -> None:
    sub = build(
        [
            *("--master", MASTER, "--deploy-mode", "cluster", "--conf", IMAGE, "--conf", f"{KEY}={work}/up"),
            *("--jars", "local:///opt/x.jar", "local:///opt/app.py"),
        ]
    )
    assert sub.uploads is None
    assert sub.app == "local:///opt/app.py" and sub.properties["spark.jars"] == "local:///opt/x.jar"


def test_client_mode_ignores_the_upload_path(work: Path) -> None:
    sub = build(
        ["--master", MASTER, "--conf", IMAGE, "--conf", f"{KEY}=s3a://nowhere/x", str(work / "app.py")]
    )
    assert sub.uploads is None and sub.app == str(work / "app.py")


def test_one_file_given_twice_is_uploaded_once(work: Path) -> None:
    sub = build(
        cluster_argv(work, "--py-files", f"{work}/dep.py", "--files", f"{work}/dep.py", upload=str(work))
    )
    assert sub.uploads is not None
    assert sorted(os.path.basename(u.target) for u in sub.uploads.uploads) == ["app.py", "dep.py"]
    assert sub.properties["spark.files"] == sub.properties["spark.submit.pyFiles"]


def test_two_files_with_one_name_are_refused_naming_both(work: Path) -> None:
    other = work / "other"
    other.mkdir()
    (other / "dep.py").write_text("")
    argv = cluster_argv(
        work, "--py-files", f"{work}/dep.py", "--files", f"{other}/dep.py", upload=f"{work}/up"
    )
    with pytest.raises(UsageError) as caught:
        build(argv)
    message = caught.value.message
    assert f"--files {other}/dep.py and --py-files {work}/dep.py are both named dep.py" in message
    assert "rename one" in message and "\n" not in message


def test_a_missing_jar_or_archive_is_named(work: Path) -> None:
    with pytest.raises(UsageError, match=r"--archives .*/gone.tgz: no such file"):
        build(cluster_argv(work, "--archives", f"{work}/gone.tgz#env", upload=f"{work}/up"))
    with pytest.raises(UsageError, match=r"--jars .*: not a regular file"):
        build(cluster_argv(work, "--jars", str(work / "up"), upload=f"{work}/up"))


# -- the upload path --------------------------------------------------------------------------------------


class FakeHadoop:
    """Hadoop's FileSystem as the uploader uses it: ``directories`` exist, ``failure`` is raised."""

    def __init__(self, directories: set[str], failure: OSError | None = None) -> None:
        self.directories = directories
        self.failure = failure
        self.properties: dict[str, str] = {}
        self.copied: list[tuple[str, str]] = []

    def opened(self, properties: dict[str, str]) -> FakeHadoop:
        self.properties = dict(properties)
        return self

    def is_directory(self, uri: str) -> bool:
        if self.failure is not None:
            raise self.failure
        if uri not in self.directories:
            raise FileNotFoundError(2, "File does not exist", uri)
        return True

    def copy_from_local(self, source: str, target: str) -> None:
        self.copied.append((source, target))

    def delete(self, uri: str) -> None:
        self.directories.discard(uri)


@pytest.mark.parametrize("scheme", ["s3a", "hdfs", "gs", "abfs", "viewfs"])
def test_other_schemes_go_through_hadoops_file_system_with_the_spark_hadoop_settings(
    work: Path, scheme: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    hadoop = FakeHadoop({f"{scheme}://bucket/uploads"})
    monkeypatch.setattr(uploads, "open_hadoop", hadoop.opened)
    sub = build(cluster_argv(work, "--conf", "spark.hadoop.fs.x.y=z", upload=f"{scheme}://bucket/uploads"))
    assert sub.uploads is not None and isinstance(sub.uploads.uploader, uploads.HadoopUploader)
    assert sub.app.startswith(f"{scheme}://bucket/uploads/spark-upload-") and sub.app.endswith("/app.py")
    assert hadoop.properties["spark.hadoop.fs.x.y"] == "z"


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (None, "no such directory; create it"),
        (OSError("UnsupportedFileSystemException: no scheme"), "Hadoop's FileSystem cannot use"),
    ],
)
def test_a_hadoop_upload_path_it_cannot_use_is_one_line(
    work: Path, monkeypatch: pytest.MonkeyPatch, failure: OSError | None, expected: str
) -> None:
    monkeypatch.setattr(uploads, "open_hadoop", FakeHadoop(set(), failure).opened)
    with pytest.raises(UsageError) as caught:
        build(cluster_argv(work, upload="s3a://bucket/uploads"))
    message = caught.value.message
    assert message.startswith(f"{KEY}=s3a://bucket/uploads: {expected}") and "\n" not in message


def test_a_jvm_that_does_not_start_is_a_usage_error_naming_the_key(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_jvm(properties: object) -> FakeHadoop:
        raise DriverStartError("the JVM for Hadoop's FileSystem did not start: no java")

    monkeypatch.setattr(uploads, "open_hadoop", no_jvm)
    with pytest.raises(UsageError, match=f"^{KEY}=hdfs://nn/up: the JVM for Hadoop's FileSystem did not"):
        build(cluster_argv(work, upload="hdfs://nn/up"))


@pytest.mark.parametrize(
    ("upload", "expected"),
    [
        ("file:///nowhere/at/all", "/nowhere/at/all is not a directory on this machine; create it"),
        ("relative/dir", "give an absolute path or file:///path"),
        ("file://server/share", "a file:// URI names a directory on this machine"),
    ],
)
def test_a_bad_file_upload_path_is_refused(work: Path, upload: str, expected: str) -> None:
    with pytest.raises(UsageError, match=expected):
        build(cluster_argv(work, upload=upload))


# -- the file:// uploader ---------------------------------------------------------------------------------


def test_the_file_uploader_copies_into_the_directory_and_deletes_it(work: Path) -> None:
    uploader = uploads.FileUploader()
    uploader.check(f"file://{work}/up")
    target = f"file://{work}/up/spark-upload-x/env.tar.gz"
    uploader.upload(str(work / "env.tar.gz"), target)
    assert (work / "up" / "spark-upload-x" / "env.tar.gz").read_bytes() == b"\x1f\x8b archive"
    uploader.delete(f"file://{work}/up/spark-upload-x")
    assert list((work / "up").iterdir()) == []


def test_uploader_for_is_the_seam_for_other_schemes(monkeypatch: pytest.MonkeyPatch) -> None:
    class Recorder:
        def check(self, base: str) -> None: ...

        def upload(self, source: str, target: str) -> None: ...

        def delete(self, directory: str) -> None: ...

    monkeypatch.setitem(uploads.UPLOADERS, "s3a", lambda properties: Recorder())
    assert isinstance(uploads.uploader_for("s3a://bucket/x"), Recorder)


# -- refusals without the key -----------------------------------------------------------------------------


def test_without_the_key_local_jars_and_archives_are_refused_naming_it(work: Path) -> None:
    for flag, value in (("--jars", f"{work}/lib.jar"), ("--archives", f"{work}/env.tar.gz#environment")):
        with pytest.raises(UsageError) as caught:
            build(cluster_argv(work, flag, value))
        message = caught.value.message
        assert message.startswith(f"{flag} {value}: in cluster mode, jars and archives are not shipped")
        assert f"set {KEY} to a directory the pods share" in message


def test_without_the_key_files_too_big_for_the_config_map_are_refused_naming_it(work: Path) -> None:
    (work / "big.py").write_text("x" * 5000)
    fake = FakeKubernetes()
    result = cli(
        [
            "submit",
            *cluster_argv(
                work, "--py-files", f"{work}/big.py", "--conf", "spark.kubernetes.configMap.maxSize=4000"
            ),
        ],
        fake,
    )
    assert result.code == 2
    assert "too big to travel in the driver's ConfigMap" in result.err
    assert f"Set {KEY} to a directory the pods share" in result.err
    assert fake.objects(PODS) == []


def test_with_the_key_a_file_too_big_for_the_config_map_is_uploaded(work: Path) -> None:
    (work / "big.py").write_text("x" * 5000)
    fake = FakeKubernetes()
    argv = cluster_argv(
        work,
        "--py-files", f"{work}/big.py",
        "--conf", "spark.kubernetes.configMap.maxSize=4000",
        "--conf", "spark.kubernetes.submission.waitAppCompletion=false",
        upload=f"file://{work}/up",
    )  # fmt: skip
    result = cli(["submit", *argv], fake)
    assert result.code == 0, result.err
    (uploaded,) = (work / "up").iterdir()
    assert (uploaded / "big.py").stat().st_size == 5000


# -- cluster mode on a FakeKubernetes ---------------------------------------------------------------------


def object_count(fake: FakeKubernetes) -> int:
    return sum(
        1
        for c in fake.calls_of("create")
        if c.resource_plural in ("pods", "services", "secrets", "configmaps")
    )


@pytest.mark.parametrize("upload", ["file:///nowhere/at/all", "s3a://bucket/uploads", "relative/dir"])
def test_a_bad_upload_path_creates_nothing(work: Path, upload: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(uploads, "open_hadoop", FakeHadoop(set()).opened)  # s3a://bucket/uploads: missing
    fake = FakeKubernetes()
    result = cli(
        ["submit", *cluster_argv(work, "--archives", f"{work}/env.tar.gz#environment", upload=upload)], fake
    )
    assert result.code == 2
    assert result.err.count("\n") == 1 and "Traceback" not in result.err
    assert object_count(fake) == 0 and fake.calls_of("create") == []
    assert list((work / "up").iterdir()) == []


def test_the_driver_gets_the_uploaded_uris_and_the_directory_stays_when_not_waiting(work: Path) -> None:
    fake = FakeKubernetes()
    argv = cluster_argv(
        work,
        "--archives", f"{work}/env.tar.gz#environment",
        "--jars", f"{work}/lib.jar",
        "--py-files", f"{work}/dep.py",
        "--conf", "spark.kubernetes.submission.waitAppCompletion=false",
        upload=f"file://{work}/up",
    )  # fmt: skip
    result = cli(["submit", *argv], fake)
    assert result.code == 0, result.err
    (directory,) = (work / "up").iterdir()
    assert directory.name.startswith("spark-upload-")
    assert sorted(p.name for p in directory.iterdir()) == ["app.py", "dep.py", "env.tar.gz", "lib.jar"]
    uri = f"file://{directory}"
    (pod,) = fake.objects(PODS)
    args = pod["spec"]["containers"][0]["args"]
    assert args[-2:] == [f"{uri}/app.py", "10"]
    assert args[args.index("--py-files") + 1] == f"{uri}/dep.py"
    (config_map,) = fake.objects(CONFIG_MAPS)
    assert not any(key.startswith("file.") for key in config_map.get("data", {}))  # nothing shipped in it
    props = parse_properties(config_map["data"]["spark.properties"])
    assert props["spark.archives"] == f"{uri}/env.tar.gz#environment"
    assert props["spark.jars"] == f"{uri}/lib.jar"
    assert f"Uploading 4 local file(s) to {uri}" in result.err
    assert f"The uploaded files stay in {uri}" in result.err


def finish(fake: FakeKubernetes) -> None:
    (pod,) = fake.objects(PODS)
    state = {"terminated": {"exitCode": 0, "reason": "Completed"}}
    fake.patch_status(
        PODS,
        "default",
        pod["metadata"]["name"],
        {"phase": "Succeeded", "containerStatuses": [{"name": "spark-kubernetes-driver", "state": state}]},
    )


def test_the_upload_directory_is_deleted_when_the_driver_ended_while_waiting(work: Path) -> None:
    fake = FakeKubernetes()
    result = cli(["submit", *cluster_argv(work, upload=f"{work}/up")], OnWatch(fake, lambda: finish(fake)))
    assert result.code == 0, result.err
    assert list((work / "up").iterdir()) == []
    assert f"Deleted the uploaded files in {work}/up/spark-upload-" in result.err


def test_ctrl_c_while_waiting_on_a_cluster_keeps_the_uploads(work: Path) -> None:
    fake = FakeKubernetes()

    def interrupt() -> None:
        raise KeyboardInterrupt

    result = cli(["submit", *cluster_argv(work, upload=f"{work}/up")], OnWatch(fake, interrupt))
    assert result.code == 130
    (directory,) = (work / "up").iterdir()
    assert f"The uploaded files stay in {directory}" in result.err


def test_a_failed_creation_deletes_the_uploads(work: Path) -> None:
    fake = FakeKubernetes()
    fake.fail_next("create", CONFIG_MAPS, status=500, count=1, message="etcd is sad")
    result = cli(["submit", *cluster_argv(work, upload=f"{work}/up")], fake)
    assert result.code == 1
    assert list((work / "up").iterdir()) == []
    assert fake.objects(PODS) == []


def test_a_failed_upload_is_one_line_and_creates_nothing(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copies: list[str] = []

    def full_disk(self: uploads.FileUploader, source: str, target: str) -> None:
        if copies:
            raise OSError(28, "No space left on device")
        copies.append(target)
        os.makedirs(os.path.dirname(uploads.file_path(target)))
        Path(uploads.file_path(target)).write_text("partial")

    monkeypatch.setattr(uploads.FileUploader, "upload", full_disk)
    fake = FakeKubernetes()
    result = cli(["submit", *cluster_argv(work, "--py-files", f"{work}/dep.py", upload=f"{work}/up")], fake)
    assert result.code == 2
    error = [line for line in result.err.splitlines() if "error" in line]
    assert len(error) == 1 and "No space left on device" in error[0] and "nothing was created" in error[0]
    assert "Traceback" not in result.err
    assert object_count(fake) == 0
    assert list((work / "up").iterdir()) == []  # the partial upload is gone too
