"""Cluster mode checks the executors' configuration as the driver will, before anything is created: bad
executor input is a usage error (exit code 2) and the cluster holds no object of the application."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cli_support import APPS, IMAGE, cli

from k8s_backend.kube.port import CONFIG_MAPS, PODS, SECRETS, SERVICES
from k8s_backend.testing import FakeKubernetes

MASTER = "pyk8s://https://k8s.test:6443"
NO_WAIT = "spark.kubernetes.submission.waitAppCompletion=false"


def submit(*conf: str) -> list[str]:
    flags = [arg for item in (IMAGE, NO_WAIT, *conf) for arg in ("--conf", item)]
    return ["submit", "--master", MASTER, "--deploy-mode", "cluster", *flags, str(APPS / "pi.py"), "10"]


def stored(fake: FakeKubernetes) -> int:
    return sum(len(fake.objects(kind)) for kind in (PODS, SERVICES, SECRETS, CONFIG_MAPS))


def template(tmp_path: Path, pod: object) -> str:
    path = tmp_path / "executor.yaml"
    path.write_text(yaml.safe_dump(pod))
    return str(path)


# (one bad executor setting, text the error must contain)
BAD = {
    "block manager port": ("spark.blockManager.port=80", "spark.blockManager.port=80 is invalid"),
    "reserved label": ("spark.kubernetes.executor.label.spark-role=x", "reserved for Spark"),
    "image with a space": (
        "spark.kubernetes.executor.container.image=apache/spark 4.3.0",
        "must not contain whitespace",
    ),
    "unterminated quote": ("spark.executor.extraJavaOptions=-Dx='open", "spark.executor.extraJavaOptions"),
    "CPU request above the limit": (
        "spark.kubernetes.executor.limit.cores=500m",
        "spark.kubernetes.executor.limit.cores=500m is invalid",
    ),
    "application id no label value": ("spark.app.id=my app", "spark.app.id=my app is invalid"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_executor_input_is_a_usage_error_and_creates_nothing(case: str) -> None:
    setting, fragment = BAD[case]
    fake = FakeKubernetes()
    result = cli(submit(setting), fake)
    assert result.code == 2, result.err
    assert fragment in result.err
    assert stored(fake) == 0
    assert [c for c in fake.calls_of("create") if c.resource_plural != "selfsubjectaccessreviews"] == []


def test_an_executor_template_in_another_namespace_creates_nothing(tmp_path: Path) -> None:
    path = template(tmp_path, {"metadata": {"namespace": "other"}, "spec": {"containers": [{"name": "x"}]}})
    fake = FakeKubernetes()
    result = cli(submit(f"spark.kubernetes.executor.podTemplateFile={path}"), fake)
    assert result.code == 2, result.err
    assert "metadata.namespace is 'other'" in result.err
    assert stored(fake) == 0


def test_template_annotations_that_overflow_the_executor_pod_create_nothing(tmp_path: Path) -> None:
    # Each part fits; the template's and the user's annotations together do not (only the built pod shows).
    path = template(tmp_path, {"metadata": {"annotations": {"big": "x" * 200_000}}})
    fake = FakeKubernetes()
    result = cli(
        submit(
            f"spark.kubernetes.executor.podTemplateFile={path}",
            "spark.kubernetes.executor.annotation.more=" + "y" * 100_000,
        ),
        fake,
    )
    assert result.code == 2, result.err
    assert "would be refused: the annotations take 300" in result.err  # and the driver-pod one
    assert stored(fake) == 0


def test_what_only_the_drivers_image_has_is_left_to_the_driver() -> None:
    # A template inside the image and a feature step of the image's Python packages cannot be read
    # here; the submission goes ahead and the driver checks them.
    fake = FakeKubernetes()
    result = cli(
        submit(
            "spark.kubernetes.executor.podTemplateFile=local:///opt/spark/executor.yaml",
            "spark.kubernetes.executor.pod.featureSteps=only_in_the_image.steps.MyStep",
            "spark.kubernetes.executor.pod.excludedFeatureSteps=only_in_the_image.steps.MyStep",
        ),
        fake,
    )
    assert result.code == 0, result.err
    assert len(fake.objects(PODS)) == 1
