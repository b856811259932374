"""Kubeconfig files of the local clusters: one document shape, written readable by the owner only.

Both the embedded cluster and the real control plane hand out a kubeconfig that kubectl and the
official client's loaders read: a server, the cluster's CA inline (when it serves https) and a bearer
token.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

CONTEXT_NAME = "k8s-backend-local"
"""The name of a local cluster's cluster, user and context in the kubeconfigs it writes."""


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


class KubeconfigEntry:
    """One local cluster added to a user's kubeconfig file (``k8s-backend local --kubeconfig PATH
    --context NAME``), and taken out again when the cluster stops: its cluster, user and context are
    named NAME, and NAME is the current context meanwhile. What else the file holds is left as it is,
    including changes made while the cluster runs; the current context goes back to the one before.
    """

    def __init__(self, path: Path, document: Mapping[str, Any]) -> None:
        """``document``: the cluster's own kubeconfig (:func:`kubeconfig_document`), whose one cluster,
        user and context are added."""
        self._path = path
        self._document = document
        self._name = str(document["current-context"])
        self._previous: str | None = None
        self._created = False

    @staticmethod
    def problem(path: Path, name: str) -> str | None:
        """Why ``path`` cannot take a context ``name`` (as ``--kubeconfig PATH: why; the fix``), or None."""
        if not name.strip():
            return "--context is empty: name the context to add, e.g. --context k8s-backend-local"
        if path.is_dir():
            return f"--kubeconfig {path}: is a directory; give the kubeconfig file to add the context to"
        if not path.parent.is_dir():
            return f"--kubeconfig {path}: no directory {path.parent}; create it first"
        if not path.exists():
            return None
        try:
            current = _read(path)
            taken = {kind: _names(current, kind) for kind in ("clusters", "users", "contexts")}
        except (OSError, ValueError, yaml.YAMLError) as error:
            return f"--kubeconfig {path}: not a kubeconfig ({error}); fix it or give another file"
        for kind, names in taken.items():
            if name in names:
                return (
                    f"--kubeconfig {path}: it already has a {kind[:-1]} named {name}; choose another name "
                    "with --context NAME"
                )
        return None

    def add(self) -> None:
        """Add the cluster, user and context, and make the context current."""
        self._created = not self._path.exists()
        current = {} if self._created else _read(self._path)
        self._previous = current.get("current-context") or None
        for kind in ("clusters", "users", "contexts"):
            current[kind] = [*(current.get(kind) or []), *self._document[kind]]
        current.setdefault("apiVersion", "v1")
        current.setdefault("kind", "Config")
        current["current-context"] = self._name
        write_private(self._path, yaml.safe_dump(current, sort_keys=False))

    def remove(self) -> None:
        """Take the entries out again (the file too, if this entry created it and nothing else is left)."""
        if not self._path.exists():
            return
        current = _read(self._path)
        for kind in ("clusters", "users", "contexts"):
            current[kind] = [item for item in current.get(kind) or [] if item.get("name") != self._name]
        if current.get("current-context") == self._name:
            current["current-context"] = self._previous or ""
        if self._created and not any(current.get(kind) for kind in ("clusters", "users", "contexts")):
            self._path.unlink()
            return
        write_private(self._path, yaml.safe_dump(current, sort_keys=False))


def _read(path: Path) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(loaded, dict):
        raise ValueError("not a YAML mapping")
    return loaded


def _names(document: Mapping[str, Any], kind: str) -> set[str]:
    items = document.get(kind) or []
    if not isinstance(items, list):
        raise ValueError(f"{kind} is not a list")
    return {str(item.get("name")) for item in items if isinstance(item, dict)}
