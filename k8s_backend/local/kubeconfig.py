"""Kubeconfig files of the local clusters: one document shape, written readable by the owner only.

Both the embedded cluster and the real control plane hand out a kubeconfig that kubectl and the
official client's loaders read: a server, the cluster's CA inline (when it serves https) and a bearer
token.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any


class KubeconfigPath(type(Path())):  # type: ignore[misc]
    """The path of a kubeconfig file: a :class:`~pathlib.Path` that also splits like a string, because
    ``kubernetes.config.new_client_from_config(path)`` and ``load_kube_config(path)`` split their
    argument as ``$KUBECONFIG`` (a ``:``-separated list) and fail on a plain Path."""

    def split(self, sep: str | None = None, maxsplit: int = -1) -> list[str]:
        return str(self).split(sep, maxsplit)


def kubeconfig_document(
    server: str,
    token: str,
    *,
    context: str,
    user: str | None = None,
    ca_pem: bytes | None = None,
    namespace: str | None = None,
) -> dict[str, Any]:
    """A kubeconfig with one cluster, one token user and one current context."""
    cluster: dict[str, Any] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode("ascii")
    user = user or context
    context_body: dict[str, Any] = {"cluster": context, "user": user}
    if namespace is not None:
        context_body["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": context, "context": context_body}],
        "current-context": context,
        "preferences": {},
    }


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by this user only (it holds tokens or keys), whatever the
    umask and whatever mode the file had before."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(text)
