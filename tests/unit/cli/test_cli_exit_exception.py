"""spark.kubernetes.driver.annotateExitException: the application's uncaught exception on the driver pod."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from cli_support import IMAGE, cli

from k8s_backend.cli.submit.exit_exception import (
    EXIT_EXCEPTION_ANNOTATION,
    LIMIT_BYTES,
    abbreviate,
    exit_annotation,
)
from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import PODS
from k8s_backend.testing import FakeKubernetes

MASTER = "pyk8s://https://k8s.test:6443"
ON = "spark.kubernetes.driver.annotateExitException=true"
POD = "spark.kubernetes.driver.pod.name=app-driver"


class Runtime:
    def prepare(self, master: str, properties: Mapping[str, str]) -> None:
        pass

    def failure(self) -> str | None:
        return None

    def stop(self) -> None:
        pass


def test_the_annotation_is_written_only_when_on_and_a_driver_pod_is_named() -> None:
    on = {"spark.kubernetes.driver.annotateExitException": "TRUE", "spark.kubernetes.driver.pod.name": "d"}
    annotation = exit_annotation(on, "team", "Traceback...")
    assert annotation is not None
    assert (annotation.namespace, annotation.pod) == ("team", "d")
    assert annotation.patch == {"metadata": {"annotations": {EXIT_EXCEPTION_ANNOTATION: "Traceback..."}}}
    assert exit_annotation({"spark.kubernetes.driver.pod.name": "d"}, "team", "x") is None  # default false
    assert exit_annotation({"spark.kubernetes.driver.annotateExitException": "true"}, "team", "x") is None
    with pytest.raises(ConfigError) as error:
        exit_annotation({"spark.kubernetes.driver.annotateExitException": "yes"}, "team", "x")
    assert error.value.key == "spark.kubernetes.driver.annotateExitException"


def test_long_texts_are_abbreviated_to_64_kib_of_utf8() -> None:
    assert abbreviate("short") == "short"
    text = "é" * LIMIT_BYTES  # two bytes each
    cut = abbreviate(text)
    assert cut.endswith("...") and len(cut.encode()) <= LIMIT_BYTES
    assert cut[:-3] == "é" * len(cut[:-3])  # no character cut in two
    exact = "a" * LIMIT_BYTES
    assert abbreviate(exact) == exact


def _driver_pod(api: FakeKubernetes) -> None:
    api.create(
        PODS,
        "default",
        {
            "metadata": {"name": "app-driver", "annotations": {"keep": "me"}},
            "spec": {"containers": [{"name": "d", "image": "spark:py"}]},
        },
    )


def _submit(api: FakeKubernetes, tmp_path: Path, body: str, *confs: str) -> int:
    app = tmp_path / "app.py"
    app.write_text(body)
    argv = ["submit", "--master", MASTER, "--conf", IMAGE]
    for conf in confs:
        argv += ["--conf", conf]
    result = cli([*argv, str(app)], api, runtime=Runtime())
    return result.code


def test_an_uncaught_exception_goes_onto_the_driver_pod(tmp_path: Path) -> None:
    api = FakeKubernetes()
    _driver_pod(api)
    code = _submit(api, tmp_path, "raise ValueError('bad input row 7')\n", ON, POD)
    assert code == 1
    annotations = api.get(PODS, "default", "app-driver")["metadata"]["annotations"]
    assert annotations["keep"] == "me"
    assert annotations[EXIT_EXCEPTION_ANNOTATION].startswith("Traceback")
    assert "ValueError: bad input row 7" in annotations[EXIT_EXCEPTION_ANNOTATION]


@pytest.mark.parametrize(
    ("body", "confs"),
    [
        ("raise ValueError('x')\n", (POD,)),  # the key is off by default
        ("import sys; sys.exit(3)\n", (ON, POD)),  # an exit is no exception, as in Spark
        ("print('fine')\n", (ON, POD)),
    ],
)
def test_nothing_is_written_otherwise(tmp_path: Path, body: str, confs: tuple[str, ...]) -> None:
    api = FakeKubernetes()
    _driver_pod(api)
    _submit(api, tmp_path, body, *confs)
    assert EXIT_EXCEPTION_ANNOTATION not in api.get(PODS, "default", "app-driver")["metadata"]["annotations"]


def test_a_failed_write_is_a_warning_and_the_exit_code_stays(tmp_path: Path) -> None:
    api = FakeKubernetes()  # no driver pod: the patch is refused
    app = tmp_path / "app.py"
    app.write_text("raise ValueError('x')\n")
    result = cli(
        ["submit", "--master", MASTER, "--conf", IMAGE, "--conf", ON, "--conf", POD, str(app)],
        api,
        runtime=Runtime(),
    )
    assert result.code == 1
    assert "could not write the exit exception on driver pod app-driver" in result.err


def test_a_bad_value_is_refused_before_the_script_runs(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    marker = tmp_path / "ran"
    app.write_text(f"open({str(marker)!r}, 'w').close()\n")
    result = cli(
        [
            "submit",
            "--master",
            MASTER,
            "--conf",
            IMAGE,
            "--conf",
            "spark.kubernetes.driver.annotateExitException=maybe",
            str(app),
        ],
        runtime=Runtime(),
    )
    assert result.code != 0
    assert "annotateExitException" in result.err
    assert not marker.exists()
