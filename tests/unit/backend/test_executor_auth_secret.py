"""The RPC auth secret of ``spark.authenticate`` lives in a Secret the application owns, never in a pod
spec; the Secret is created before any executor pod and is gone after stop(), however start ended."""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

import pytest

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.kube.port import PODS, SECRETS, ApiError
from k8s_backend.pods.auth_secret import AUTH_SECRET_KEY, executor_auth_secret_name
from k8s_backend.pods.constants import EXECUTOR_ROLE, SPARK_APP_ID_LABEL, SPARK_ROLE_LABEL
from k8s_backend.testing import FakeKubernetes

WAIT = 60.0  # generous: the waits end on conditions
SECRET = "zz-rpc-secret-zz"
AUTH = {"spark.authenticate": "true", "spark.authenticate.secret": SECRET}


def backend(api: FakeKubernetes, **extra: str) -> Any:
    return KubernetesClusterSchedulerBackend.create(
        {
            "spark.kubernetes.container.image": "spark:4.3.0",
            "spark.executor.instances": "2",
            "spark.kubernetes.allocation.batch.delay": "200ms",
            **AUTH,
            **extra,
        },
        app_id="app-1",
        driver_url="spark://CoarseGrainedScheduler@d:7078",
        api=api,
    )


def wait_for(predicate: Any) -> bool:
    pause = threading.Event()
    for _ in range(int(WAIT / 0.01)):
        if predicate():
            return True
        pause.wait(0.01)
    return bool(predicate())


def test_executors_read_the_secret_from_an_owned_secret_created_before_them() -> None:
    api = FakeKubernetes()
    b = backend(api)
    b.start()
    try:
        assert wait_for(lambda: len(api.objects(PODS, "default")) == 2)
        [secret] = api.objects(SECRETS, "default")
        labels = secret["metadata"]["labels"]
        assert labels == {SPARK_APP_ID_LABEL: "app-1", SPARK_ROLE_LABEL: EXECUTOR_ROLE}
        assert secret["immutable"] is True
        assert base64.b64decode(secret["data"][AUTH_SECRET_KEY]).decode() == SECRET
        creates = [c.resource_plural for c in api.calls_of("create")]
        assert creates.index("secrets") < creates.index("pods"), creates
        for pod in api.objects(PODS, "default"):
            assert SECRET not in json.dumps(pod), "the secret is written into a pod spec"
            [container] = pod["spec"]["containers"]
            [env] = [e for e in container["env"] if e["name"] == "_SPARK_AUTH_SECRET"]
            ref = {"name": secret["metadata"]["name"], "key": AUTH_SECRET_KEY}
            assert env == {"name": "_SPARK_AUTH_SECRET", "valueFrom": {"secretKeyRef": ref}}
    finally:
        b.stop()
    assert api.objects(SECRETS, "default") == []
    assert api.objects(PODS, "default") == []


def test_the_secret_is_deleted_at_stop_even_when_executor_pods_are_kept() -> None:
    api = FakeKubernetes()
    b = backend(api, **{"spark.kubernetes.executor.deleteOnTermination": "false"})
    b.start()
    assert wait_for(lambda: len(api.objects(PODS, "default")) == 2)
    b.stop()
    assert len(api.objects(PODS, "default")) == 2  # kept for debugging, as configured
    assert api.objects(SECRETS, "default") == [], "a secret outlived its application"


def test_a_start_that_fails_after_the_secret_leaves_no_secret() -> None:
    api = FakeKubernetes()
    api.fail_next("create", PODS, status=403, count=100)
    b = backend(api, **{"spark.executor.maxNumFailures": "1"})
    b.start()
    assert wait_for(lambda: b.state.name in ("FAILED", "STOPPED"))
    b.stop()
    assert api.objects(SECRETS, "default") == []


def test_no_secret_without_authentication() -> None:
    api = FakeKubernetes()
    b = KubernetesClusterSchedulerBackend.create(
        {"spark.kubernetes.container.image": "spark:4.3.0", "spark.executor.instances": "1"},
        app_id="app-1",
        driver_url="spark://CoarseGrainedScheduler@d:7078",
        api=api,
    )
    b.start()
    try:
        assert wait_for(lambda: len(api.objects(PODS, "default")) == 1)
        assert api.calls_of("create", SECRETS) == []
    finally:
        b.stop()


def test_a_forbidden_secret_create_fails_start_before_any_pod() -> None:
    api = FakeKubernetes()
    api.fail_next("create", SECRETS, status=403)
    b = backend(api)
    with pytest.raises(ApiError):
        b.start()
    b.stop()
    assert api.objects(PODS, "default") == []


def test_the_secret_name_fits_the_name_limit() -> None:
    assert executor_auth_secret_name("1a2b3c") == "spark-exec-1a2b3c-auth-secret"
    assert len(executor_auth_secret_name("x" * 300)) == 253
