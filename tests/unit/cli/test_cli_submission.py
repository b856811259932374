"""Checks made before any API call: the application file, masters, property values, images."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

from k8s_backend.cli.common.cluster_api import normalize_master
from k8s_backend.cli.common.errors import UsageError
from k8s_backend.cli.common.submit_args import parse_submit_args
from k8s_backend.cli.submit.submission import Submission, build_submission
from k8s_backend.kube.masters import MasterKind
from k8s_backend.local.images import default_spark_image

IMAGE = "--conf=spark.kubernetes.container.image=spark:test"


@pytest.fixture
def app(tmp_path: Path) -> Path:
    path = tmp_path / "app.py"
    path.write_text("print('hi')\n")
    return path


def build(argv: list[str]) -> Submission:
    return build_submission(parse_submit_args(argv), {})


def test_a_complete_command_line_becomes_a_submission(app: Path) -> None:
    sub = build(
        [
            "--master",
            "k8s://https://example.com:6443",
            "--deploy-mode=cluster",
            "--name",
            "My App",
            IMAGE,
            "--conf",
            "spark.kubernetes.namespace=team",
            "--conf",
            "spark.kubernetes.submission.waitAppCompletion=false",
            "--conf",
            "spark.kubernetes.report.interval=5s",
            str(app),
            "a",
            "b",
        ]
    )
    assert sub.master == "pyk8s://https://example.com:6443"  # k8s:// is a synonym
    assert sub.master_kind is MasterKind.API_SERVER
    assert sub.deploy_mode == "cluster"
    assert (sub.app_name, sub.namespace) == ("My App", "team")
    assert sub.app_args == ("a", "b")
    assert not sub.wait
    assert sub.conf.api.master == "https://example.com:6443"


@pytest.mark.parametrize(
    ("master", "kind"),
    [(None, MasterKind.DEFAULT), ("pyk8s://", MasterKind.DEFAULT), ("pyk8s://local", MasterKind.LOCAL)],
)
def test_master_kinds(app: Path, master: str | None, kind: MasterKind) -> None:
    argv = ([f"--master={master}"] if master else []) + [IMAGE, str(app)]
    assert build(argv).master_kind is kind


def test_a_non_kubernetes_master_is_refused_with_the_accepted_forms() -> None:
    with pytest.raises(UsageError, match=r"--master local\[2\]: .*pyk8s://https://HOST:PORT"):
        normalize_master("local[2]")


def test_the_application_file_is_required_and_must_exist(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no application file"):
        build(["--master", "pyk8s://local"])
    with pytest.raises(UsageError, match=r"application file .*missing.py: no such file"):
        build(["--master", "pyk8s://local", str(tmp_path / "missing.py")])
    with pytest.raises(UsageError, match="not a regular file"):
        build(["--master", "pyk8s://local", str(tmp_path)])


def test_remote_applications_are_taken_and_jvm_ones_refused(app: Path) -> None:
    # Fetched with Hadoop's FileSystem when the driver runs (k8s_backend.cli.submit.client_mode.fetched).
    assert build(["--master", "pyk8s://local", "s3a://b/app.py"]).app == "s3a://b/app.py"
    with pytest.raises(UsageError, match="runs Python applications"):
        build(["--master", "pyk8s://local", "job.jar"])


def test_local_uris_are_image_paths_in_cluster_mode_and_must_exist_in_client_mode(app: Path) -> None:
    sub = build(["--master", "pyk8s://local", "--deploy-mode", "cluster", "local:///opt/app/main.py"])
    assert sub.app == "local:///opt/app/main.py"
    with pytest.raises(UsageError, match="does not exist on this machine"):
        build(["--master", "pyk8s://local", "local:///opt/app/main.py"])
    assert build(["--master", "pyk8s://local", f"local://{app}"]).app == f"local://{app}"


def test_py_files_and_files_must_exist(app: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--py-files .*nope.zip: no such file"):
        build(["--master", "pyk8s://local", "--py-files", f"{app},{tmp_path / 'nope.zip'}", str(app)])
    sub = build(["--master", "pyk8s://local", "--files", "http://x/data.csv", str(app)])
    assert sub.properties["spark.files"] == "http://x/data.csv"  # remote: Spark fetches it


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--executor-memory", "lots"], "spark.executor.memory=lots is not a size"),
        (["--conf", "spark.kubernetes.allocation.batch.size=0"], "spark.kubernetes.allocation.batch.size=0"),
        (
            ["--conf", "spark.kubernetes.submission.waitAppCompletion=maybe"],
            "spark.kubernetes.submission.waitAppCompletion=maybe is not a boolean",
        ),
        (["--conf", "spark.kubernetes.report.interval=soon"], "spark.kubernetes.report.interval=soon"),
        (["--conf", "spark.kubernetes.namespace=Bad_NS"], "spark.kubernetes.namespace=Bad_NS is invalid"),
        (["--master", "pyk8s://https://host:notaport"], "is not a Kubernetes API server URL"),
    ],
)
def test_invalid_values_name_the_key(app: Path, extra: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        build([*extra, IMAGE, str(app)])


def test_images_are_required_except_on_the_local_cluster(app: Path) -> None:
    with pytest.raises(UsageError, match="no executor image: set spark.kubernetes.container.image") as caught:
        build(["--master", "pyk8s://", str(app)])
    # The example image is the installed pyspark's version, as `k8s-backend local` uses.
    assert str(caught.value).endswith(f"--conf spark.kubernetes.container.image={default_spark_image()}")
    assert default_spark_image() == f"apache/spark:{metadata.version('pyspark')}"
    executor_only = "--conf=spark.kubernetes.executor.container.image=spark:exec"
    with pytest.raises(UsageError, match="no driver image"):
        build(["--master", "pyk8s://", "--deploy-mode", "cluster", executor_only, str(app)])
    assert build(["--master", "pyk8s://", executor_only, str(app)]).deploy_mode == "client"
    assert (
        build(["--master", "pyk8s://local", "--deploy-mode", "cluster", str(app)]).master_kind
        is MasterKind.LOCAL
    )


def test_not_waiting_is_overridden_on_the_embedded_local_cluster(app: Path) -> None:
    sub = build(
        [
            "--master",
            "pyk8s://local",
            "--deploy-mode",
            "cluster",
            "--conf",
            "spark.kubernetes.submission.waitAppCompletion=false",
            str(app),
        ]
    )
    assert sub.wait
    assert any("waitAppCompletion=false is ignored" in w for w in sub.warnings)


def test_driver_command_is_split_like_a_shell(app: Path) -> None:
    argv = ["--master", "pyk8s://local", "--driver-command", "python3 -m k8s_backend.cli.main", str(app)]
    assert build(argv).driver_command == ("python3", "-m", "k8s_backend.cli.main")
    with pytest.raises(UsageError, match="--driver-command is empty"):
        build(["--master", "pyk8s://local", "--driver-command", " ", str(app)])


def test_local_jars_and_archives_are_refused_in_cluster_mode(app: Path, tmp_path: Path) -> None:
    jar, env = tmp_path / "x.jar", tmp_path / "env.tgz"
    jar.write_bytes(b"PK")
    env.write_bytes(b"\x1f\x8b")
    base = ["--master", "pyk8s://local", "--deploy-mode", "cluster"]
    with pytest.raises(UsageError, match=f"--jars {jar}: in cluster mode, jars and archives are not shipped"):
        build([*base, "--jars", str(jar), str(app)])
    with pytest.raises(UsageError, match=f"--archives {env}#env"):
        build([*base, "--archives", f"{env}#env", str(app)])
    ok = build([*base, "--jars", "local:///opt/x.jar,https://repo/y.jar", str(app)])
    assert ok.properties["spark.jars"] == "local:///opt/x.jar,https://repo/y.jar"
    assert build(["--master", "pyk8s://local", "--jars", str(jar), str(app)]).deploy_mode == "client"


@pytest.mark.parametrize("mode", ["client", "cluster"])
@pytest.mark.parametrize(
    ("flag", "entry", "shown"),
    [
        ("--archives", "nosuch.tar.gz#env", "--archives nosuch.tar.gz: no such file"),
        ("--archives", "file:///nowhere/env.zip", "--archives file:///nowhere/env.zip: no such file"),
        ("--jars", "/nowhere/x.jar", "--jars /nowhere/x.jar: no such file"),
    ],
)
def test_missing_local_archives_and_jars_are_one_usage_error(
    app: Path, mode: str, flag: str, entry: str, shown: str
) -> None:
    with pytest.raises(UsageError) as caught:
        build(["--master", "pyk8s://local", "--deploy-mode", mode, flag, entry, str(app)])
    assert str(caught.value) == shown


def test_remote_and_image_archives_and_jars_are_not_checked_here(app: Path) -> None:
    sub = build(
        [
            "--master",
            "pyk8s://local",
            "--deploy-mode",
            "cluster",
            "--archives",
            "s3a://bucket/env.tar.gz#env,local:///opt/env.zip",
            "--jars",
            "hdfs://nn/x.jar",
            str(app),
        ]
    )
    assert sub.properties["spark.archives"] == "s3a://bucket/env.tar.gz#env,local:///opt/env.zip"


@pytest.mark.parametrize(
    ("mode", "key"),
    [
        ("client", "spark.kubernetes.executor.podTemplateFile"),
        ("cluster", "spark.kubernetes.driver.podTemplateFile"),
    ],
)
def test_a_missing_or_bad_pod_template_is_one_usage_error(
    app: Path, tmp_path: Path, mode: str, key: str
) -> None:
    argv = ["--master", "pyk8s://local", "--deploy-mode", mode]
    with pytest.raises(UsageError) as caught:
        build([*argv, "--conf", f"{key}=/nowhere/pod.yaml", str(app)])
    message = str(caught.value)
    assert "\n" not in message
    assert f"{key}='/nowhere/pod.yaml': cannot read it (No such file or directory)" in message
    fix = f"point {key} to a Pod template (YAML or JSON) on this machine, or leave it unset"
    assert message.endswith(fix)
    bad = tmp_path / "pod.yaml"
    bad.write_text("kind: Service\n")
    with pytest.raises(UsageError, match="expected kind: Pod, got kind: Service"):
        build([*argv, "--conf", f"{key}={bad}", str(app)])
    good = tmp_path / "good.yaml"
    good.write_text("kind: Pod\nmetadata: {labels: {team: a}}\n")
    assert build([*argv, "--conf", f"{key}={good}", str(app)]).properties[key] == str(good)


def test_the_template_a_cluster_mode_driver_reads_in_its_pod_is_not_checked_here(app: Path) -> None:
    # The executors' template of a cluster-mode driver may exist only in the driver's image.
    argv = ["--master", "pyk8s://local", "--deploy-mode", "cluster"]
    key = "spark.kubernetes.executor.podTemplateFile"
    assert build([*argv, "--conf", f"{key}=/opt/templates/exec.yaml", str(app)]).properties[key]


def test_an_unknown_kubernetes_key_is_told_before_anything_starts(app: Path) -> None:
    token = "not-for-the-terminal"
    sub = build(
        [
            "--master",
            "k8s://https://example.com:6443",
            IMAGE,
            "--conf",
            f"spark.kubernetes.authenticate.oauthTokn={token}",
            str(app),
        ]
    )
    told = [w for w in sub.warnings if "spark.kubernetes.authenticate.oauthTokn" in w]
    assert told == [
        "Unknown Spark property spark.kubernetes.authenticate.oauthTokn is ignored by k8s_backend; "
        "did you mean spark.kubernetes.authenticate.oauthToken?"
    ]
    assert all(token not in w for w in sub.warnings)
    assert token not in repr(sub)
