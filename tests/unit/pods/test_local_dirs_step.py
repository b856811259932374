"""LocalDirsStep: a port of Spark's LocalDirsFeatureStepSuite plus template reuse."""

from __future__ import annotations

import re

from pod_builder_fixtures import env_values, make_conf, run_step

from k8s_backend.conf.model import VolumeSpec
from k8s_backend.pods.step import SparkPod
from k8s_backend.pods.steps.local_dirs import LocalDirsStep, generated_local_dir
from k8s_backend.pods.steps.volumes import MountVolumesStep

DEFAULT_DIR = "/var/data/default-local-dir"


def configure(pod: SparkPod | None = None, **executor):
    conf = make_conf(**executor)
    return run_step(LocalDirsStep(conf, lambda: DEFAULT_DIR), conf, pod)


def test_resolve_to_default_local_dir_if_nothing_is_configured() -> None:
    pod = configure()
    assert pod.pod["spec"]["volumes"] == [{"name": "spark-local-dir-1", "emptyDir": {}}]
    assert pod.container["volumeMounts"] == [{"name": "spark-local-dir-1", "mountPath": DEFAULT_DIR}]
    assert pod.container["env"] == [{"name": "SPARK_LOCAL_DIRS", "value": DEFAULT_DIR}]


def test_generated_default_dir_is_unique_under_var_data() -> None:
    first, second = generated_local_dir(), generated_local_dir()
    assert re.fullmatch(r"/var/data/spark-[0-9a-f-]{36}", first)
    assert first != second


def test_use_configured_local_dirs() -> None:
    pod = configure(local_dirs=("/var/data/my-local-dir-1", "/var/data/my-local-dir-2"))
    assert pod.pod["spec"]["volumes"] == [
        {"name": "spark-local-dir-1", "emptyDir": {}},
        {"name": "spark-local-dir-2", "emptyDir": {}},
    ]
    assert pod.container["volumeMounts"] == [
        {"name": "spark-local-dir-1", "mountPath": "/var/data/my-local-dir-1"},
        {"name": "spark-local-dir-2", "mountPath": "/var/data/my-local-dir-2"},
    ]
    assert pod.container["env"] == [
        {"name": "SPARK_LOCAL_DIRS", "value": "/var/data/my-local-dir-1,/var/data/my-local-dir-2"}
    ]


def test_use_tmpfs_to_back_default_local_dir() -> None:
    pod = configure(local_dirs_tmpfs=True)
    assert pod.pod["spec"]["volumes"] == [{"name": "spark-local-dir-1", "emptyDir": {"medium": "Memory"}}]
    assert pod.container["env"] == [{"name": "SPARK_LOCAL_DIRS", "value": DEFAULT_DIR}]


def test_local_dir_on_mounted_volume() -> None:
    conf = make_conf(volumes=(VolumeSpec("spark-local-dir-test", "hostPath", "/tmp", path="/hostPath/tmp"),))
    mounted = run_step(MountVolumesStep(conf), conf)
    pod = run_step(LocalDirsStep(conf, lambda: DEFAULT_DIR), conf, mounted)
    assert pod.pod["spec"]["volumes"] == [
        {"name": "spark-local-dir-test", "hostPath": {"path": "/hostPath/tmp"}}
    ]
    assert [m["name"] for m in pod.container["volumeMounts"]] == ["spark-local-dir-test"]
    assert env_values(pod.container)["SPARK_LOCAL_DIRS"] == "/tmp"


def test_template_volume_of_the_same_name_backs_the_local_dir() -> None:
    template = SparkPod(
        {"spec": {"volumes": [{"name": "spark-local-dir-1", "hostPath": {"path": "/mnt/fast-disk"}}]}},
        {"name": "spark"},
    )
    pod = configure(template, local_dirs=("/scratch",))
    assert pod.pod["spec"]["volumes"] == [
        {"name": "spark-local-dir-1", "hostPath": {"path": "/mnt/fast-disk"}}
    ]
    assert pod.container["volumeMounts"] == [{"name": "spark-local-dir-1", "mountPath": "/scratch"}]


def test_spark_local_dirs_env_replaces_an_earlier_definition() -> None:
    pod = configure(SparkPod({}, {"env": [{"name": "SPARK_LOCAL_DIRS", "value": "/old"}]}))
    assert pod.container["env"] == [{"name": "SPARK_LOCAL_DIRS", "value": DEFAULT_DIR}]
