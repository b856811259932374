"""The API server's user towards kubelets: RBAC lets it at the kubelet's API (logs, exec, stats), as a
kubelet's webhook authorizer asks, and nothing more; and the control plane signs kubelet serving
certificates that chain to the CA it hands out.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from k8s_backend.local.control_plane import ControlPlane
from k8s_backend.local.control_plane.certs import kubelet_serving_spec
from k8s_backend.local.control_plane.credentials import KUBELET_CLIENT

pytestmark = [pytest.mark.real, pytest.mark.timeout(1200)]

REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


def allowed(cp: ControlPlane, **attributes: Any) -> bool:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": KUBELET_CLIENT, "resourceAttributes": attributes},
    }
    status, body = cp.request("POST", REVIEWS, body=review)
    assert status == 201, body
    return bool(body["status"].get("allowed"))


@pytest.mark.parametrize("subresource", ["proxy", "log", "stats"])
def test_the_kubelet_client_may_use_the_kubelets_api(cp: ControlPlane, subresource: str) -> None:
    # A kubelet's webhook authorizer maps GET /containerLogs to nodes/proxy, POST /exec to create on
    # nodes/proxy, /logs to nodes/log and /stats to nodes/stats.
    assert allowed(cp, verb="get", resource="nodes", subresource=subresource, name="k8s-backend-kubelet")
    assert allowed(cp, verb="create", resource="nodes", subresource="proxy", name="k8s-backend-kubelet")


def test_the_kubelet_client_may_not_touch_pods_or_secrets(cp: ControlPlane) -> None:
    assert not allowed(cp, verb="create", resource="pods", namespace="default")
    assert not allowed(cp, verb="get", resource="secrets", namespace="default")


def test_a_signed_kubelet_certificate_chains_to_the_handed_out_ca(cp: ControlPlane, tmp_path: Path) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("checking the chain needs the openssl command")
    cert, key = tmp_path / "kubelet.crt", tmp_path / "kubelet.key"
    cp.sign(kubelet_serving_spec("k8s-backend-kubelet", ["198.18.3.1"]), cert, key)
    proc = subprocess.run(
        ["openssl", "verify", "-CAfile", cp.ca_file, str(cert)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
