"""spark.kubernetes.driver.annotateExitException against the real kube-apiserver: the abbreviated
traceback of a failed application is accepted as an annotation of the driver pod (whose annotations are
limited to 256 KiB in all), and the pod's other annotations are kept.

Marked ``real``: skipped (with the one-line reason) when the control plane is neither cached nor buildable.
"""

from __future__ import annotations

import pytest

from k8s_backend.cli.submit.exit_exception import (
    EXIT_EXCEPTION_ANNOTATION,
    LIMIT_BYTES,
    exit_annotation,
    write_exit_annotation,
)
from k8s_backend.kube.port import PODS, ApiError
from k8s_backend.local.control_plane import ControlPlane

pytestmark = [pytest.mark.real, pytest.mark.timeout(600)]

PROPS = {
    "spark.kubernetes.driver.annotateExitException": "true",
    "spark.kubernetes.driver.pod.name": "exit-driver",
}


def test_the_longest_exit_exception_is_accepted_on_the_driver_pod(cp: ControlPlane) -> None:
    api = cp.api()
    api.create(
        PODS,
        "default",
        {
            "metadata": {"name": "exit-driver", "annotations": {"keep": "me"}},
            "spec": {"containers": [{"name": "d", "image": "spark:py"}]},
        },
    )
    try:
        # Multi-byte characters: a 64 Ki-character cut (Spark's) would be 256 KiB here and refused.
        text = "Traceback (most recent call last):\n" + "é€" * LIMIT_BYTES
        annotation = exit_annotation(PROPS, "default", text)
        assert annotation is not None
        write_exit_annotation(api, annotation)
        annotations = api.get(PODS, "default", "exit-driver")["metadata"]["annotations"]
        assert annotations["keep"] == "me"
        written = annotations[EXIT_EXCEPTION_ANNOTATION]
        assert written.startswith("Traceback") and written.endswith("...")
        assert len(written.encode()) <= LIMIT_BYTES
        # What the cut prevents: the same text uncut is refused by the API server.
        with pytest.raises(ApiError):
            api.patch(PODS, "default", "exit-driver", {"metadata": {"annotations": {"too-long": text}}})
    finally:
        api.delete(PODS, "default", "exit-driver", grace_period_seconds=0)
