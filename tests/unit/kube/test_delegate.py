"""The port's delegating base: every KubernetesApi method reaches the wrapped adapter through around(),
and an adapter's extras pass through."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from k8s_backend.kube.delegate import DelegatingKubernetesApi
from k8s_backend.kube.port import PODS, KubernetesApi
from k8s_backend.testing import FakeKubernetes

_T = TypeVar("_T")


class Recording(DelegatingKubernetesApi):
    def __init__(self, api: Any) -> None:
        super().__init__(api)
        self.verbs: list[str] = []

    def around(self, verb: str, resource: Any, call: Callable[[], _T]) -> _T:
        self.verbs.append(verb)
        return call()


def test_every_port_method_is_delegated_through_around() -> None:
    port_methods = {name for name in vars(KubernetesApi) if not name.startswith("_")} - {"close"}
    assert port_methods <= set(vars(DelegatingKubernetesApi)), "a port method is not delegated"
    fake = FakeKubernetes()
    api = Recording(fake)
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    api.create(PODS, "default", pod)
    api.get(PODS, "default", "p")
    api.list(PODS, "default")
    api.patch(PODS, "default", "p", {"metadata": {"labels": {"a": "b"}}})
    api.watch(PODS, "default", resource_version=fake.resource_version).close()
    api.delete(PODS, "default", "p", grace_period_seconds=0)
    api.delete_collection(PODS, "default")
    assert api.verbs == ["create", "get", "list", "patch", "watch", "delete", "delete_collection"]
    assert api.objects(PODS) == []  # an extra of the fake, passed through
