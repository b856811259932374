"""Errors the library raises to its users."""

from __future__ import annotations


class K8sBackendError(Exception):
    """Base class of every error k8s_backend raises on purpose."""


class ConfigError(K8sBackendError, ValueError):
    """A Spark property has a value k8s_backend cannot use.

    The message names the key, the bad value and what is accepted. Raised before anything is created
    on the cluster.
    """

    def __init__(self, message: str, *, key: str | None = None, value: object = None) -> None:
        super().__init__(message)
        self.key = key
        self.value = value


class BackendStateError(K8sBackendError, RuntimeError):
    """A hook was called in a state of the backend that does not allow it."""


class ApplicationFailedError(K8sBackendError, RuntimeError):
    """The backend gave up on the application (e.g. too many executor failures)."""
