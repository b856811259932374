"""A missing JDK (no bridge jar) is a clean error with exit code 2, not a traceback."""

from __future__ import annotations

from typing import Any

from cli_support import APPS, IMAGE, cli

from k8s_backend.spark.jar import BridgeJarError
from k8s_backend.testing import FakeKubernetes


class _NoJdk:
    def prepare(self, master: str, properties: Any) -> None:
        raise BridgeJarError("no javac found: install a JDK 17+ (openjdk-17-jdk-headless)")

    def failure(self) -> str | None:
        return None

    def stop(self) -> None:
        pass


def test_a_missing_jdk_is_a_clean_error() -> None:
    fake = FakeKubernetes()
    result = cli(
        ["submit", "--master", "pyk8s://https://k8s.test:6443", "--conf", IMAGE, str(APPS / "pi.py")],
        fake,
        runtime=_NoJdk(),
    )
    assert result.code == 2 and "install a JDK" in result.err
    # Only the permission checks (SelfSubjectAccessReviews) were posted: nothing was created.
    created = {c.resource_plural for c in fake.calls_of("create")}
    assert created <= {"selfsubjectaccessreviews"}
