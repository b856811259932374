"""Running ``k8s-backend`` in-process against a FakeKubernetes, and test doubles around the fake."""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from k8s_backend.cli.common.cluster_api import ACCESS_REVIEWS, Connection
from k8s_backend.cli.common.console import Console
from k8s_backend.cli.common.deps import Dependencies
from k8s_backend.cli.common.errors import ApiEndpoint
from k8s_backend.cli.main import run
from k8s_backend.conf.model import ApiClientConf
from k8s_backend.kube.port import PODS, KubernetesApi, Obj, Resource, WatchStream
from k8s_backend.testing import FakeKubernetes

APPS = Path(__file__).resolve().parent / "apps"
ENDPOINT = ApiEndpoint("https://k8s.test:6443", "spark.master https://k8s.test:6443")
IMAGE = "spark.kubernetes.container.image=spark:test"
# Where commands run here save what they would save in ~/.cache/k8s_backend (inline tokens of the
# printed commands): never the user's own cache.
TEST_CACHE = Path(tempfile.gettempdir()) / f"k8s-backend-cli-tests-{os.getuid()}"


class Wrapped:
    """Delegates everything to a KubernetesApi; subclasses override what they change."""

    def __init__(self, api: KubernetesApi) -> None:
        self.inner = api

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def close(self) -> None:
        """Keep the fake usable after the command closed its connection."""


class OnWatch(Wrapped):
    """Runs ``action`` each time a pod watch is opened (e.g. to make the driver finish)."""

    def __init__(self, api: KubernetesApi, action: Callable[[], None]) -> None:
        super().__init__(api)
        self.action = action

    def watch(self, resource: Resource, namespace: str | None, **kwargs: Any) -> WatchStream:
        stream = self.inner.watch(resource, namespace, **kwargs)
        if resource == PODS:
            self.action()
        return stream


class AccessReviews(Wrapped):
    """Answers SelfSubjectAccessReviews: ``denied`` holds the (verb, plural) pairs that are refused."""

    def __init__(self, api: KubernetesApi, denied: Iterable[tuple[str, str]]) -> None:
        super().__init__(api)
        self.denied = set(denied)
        self.reviews: list[tuple[str, str]] = []

    def create(self, resource: Resource, namespace: str | None, body: Obj) -> Obj:
        if resource.plural != ACCESS_REVIEWS.plural:
            return self.inner.create(resource, namespace, body)
        attributes = body["spec"]["resourceAttributes"]
        asked = (attributes["verb"], attributes["resource"])
        self.reviews.append(asked)
        allowed = asked not in self.denied
        return {**body, "status": {"allowed": allowed, "reason": "" if allowed else "RBAC: no rule"}}


@attrs.define
class Result:
    code: int
    out: str
    err: str


def connector(api: Any) -> Callable[[ApiClientConf, str], Connection]:
    def connect(conf: ApiClientConf, namespace: str) -> Connection:
        return Connection(api, ENDPOINT)

    return connect


def cli(
    argv: list[str],
    api: Any = None,
    *,
    environ: Mapping[str, str] | None = None,
    **deps: Any,
) -> Result:
    """Run the command in-process; ``api`` (default: a fresh FakeKubernetes) answers every API call."""
    out, err = io.StringIO(), io.StringIO()
    dependencies = Dependencies(
        console=Console(out, err),
        environ={"K8S_BACKEND_CACHE_DIR": str(TEST_CACHE), **(environ or {})},
        connect=deps.pop("connect", None) or connector(api if api is not None else FakeKubernetes()),
        sleep=deps.pop("sleep", lambda _: None),
        **deps,
    )
    code = run(argv, dependencies)
    return Result(code, out.getvalue(), err.getvalue())
