"""Errors of the ``k8s-backend`` command and how API failures are told to a user.

Every problem found before anything is created on the cluster (bad arguments, bad properties, an
unreachable API server, missing permissions) is a :class:`UsageError` and exits with code 2, as a
spark-submit usage error does.
"""

from __future__ import annotations

import attrs

from k8s_backend.kube.port import (
    ApiConnectionError,
    ApiError,
    ConflictError,
    ForbiddenError,
    InvalidError,
    UnauthorizedError,
)

USAGE_EXIT_CODE = 2
FAILURE_EXIT_CODE = 1


class CliError(Exception):
    """A failure the command reports in one message, exiting with ``exit_code``."""

    exit_code = FAILURE_EXIT_CODE

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(CliError):
    """Bad input, found before anything was created on the cluster (exit code 2)."""

    exit_code = USAGE_EXIT_CODE


@attrs.frozen
class ApiEndpoint:
    """Which API server the command talks to and where that choice came from (for error messages)."""

    url: str
    source: str


def permission_error(verb: str, resource: str, namespace: str | None, detail: str = "") -> UsageError:
    """The message for a missing RBAC permission: which verb, on which resource, where."""
    where = f" in namespace {namespace}" if namespace else " (cluster-wide)"
    check = f"kubectl auth can-i {verb} {resource}" + (f" -n {namespace}" if namespace else "")
    extra = f" ({detail})" if detail else ""
    return UsageError(
        f"missing permission: {verb} {resource}{where}{extra}. Ask a cluster admin for a Role granting "
        f"it to the account you use (check with `{check}`)"
    )


def explain_api_error(
    error: ApiError, endpoint: ApiEndpoint, *, verb: str, resource: str, namespace: str | None
) -> CliError:
    """Turn an API error into a message naming what failed and how to fix it.

    Connection problems, 401 and 403 are usage errors (exit 2): nothing can work until they are fixed.
    Other errors keep the server's own message.
    """
    if isinstance(error, ApiConnectionError):
        # The adapter's message may already say where the URL came from: say it once.
        source = "" if endpoint.source in error.message else f" (from {endpoint.source})"
        return UsageError(
            f"cannot reach the Kubernetes API at {endpoint.url}{source}: {error.message}. Check the URL in "
            "--master / spark.master (pyk8s://https://HOST:PORT), or --kubeconfig / --context"
        )
    if isinstance(error, UnauthorizedError):
        return UsageError(
            f"the Kubernetes API at {endpoint.url} rejected the credentials (401 Unauthorized; API server "
            f"from {endpoint.source}). Set spark.kubernetes.authenticate.submission.oauthToken (or "
            "oauthTokenFile), or refresh your kubeconfig credentials"
        )
    if isinstance(error, ForbiddenError):
        return permission_error(verb, resource, namespace, error.message)
    if isinstance(error, ConflictError) and verb == "create":
        return UsageError(
            f"cannot create {resource} in namespace {namespace}: {error.message}. Choose another name "
            "(e.g. spark.kubernetes.driver.pod.name) or delete the existing object"
        )
    if isinstance(error, InvalidError):
        return UsageError(f"the API server refused the {resource} as invalid: {error.message}")
    where = f" in namespace {namespace}" if namespace else ""
    return CliError(f"{verb} {resource}{where} failed: {error}")
