"""The in-memory Kubernetes API: objects, selectors, patches, validation, defaults and watches, with the
API server's semantics; ``pyk8s://local`` serves it over HTTP, and the unit tests use it as their fake API."""

from k8s_backend.memkube.api import InMemoryKubernetes

__all__ = ["InMemoryKubernetes"]
