"""Who may talk to the control plane: a static token file for the API server (an admin in
``system:masters``, the controller manager's and scheduler's own users, which the default RBAC policy
already binds, and the process kubelet as a node in ``system:nodes``), a kubeconfig per user, and the
roles of the API server's own user towards kubelets.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml

from k8s_backend.local.kubeconfig import kubeconfig_document, write_private

ADMIN = "k8s-backend-admin"
CONTROLLER_MANAGER = "system:kube-controller-manager"
SCHEDULER = "system:kube-scheduler"
# One process kubelet serves several simulated nodes with one identity. As a node user the Node authorizer
# lets it act for the node of its own name only, so :func:`kubelet_role_binding` grants it the
# ``system:node`` ClusterRole (every node's permissions, as clusters before Kubernetes 1.8 did).
KUBELET = "system:node:k8s-backend-kubelet"
NODES_GROUP = "system:nodes"
# The API server's user towards kubelets (``kubectl logs``, ``exec``): its client certificate names it, and
# :func:`kubelet_client_role_binding` gives it the built-in ``system:kubelet-api-admin`` ClusterRole, which
# a kubelet's webhook authorizer checks.
KUBELET_CLIENT = "k8s-backend:kube-apiserver-kubelet-client"


@attrs.frozen
class TokenUser:
    """One line of ``--token-auth-file``."""

    name: str
    token: str
    groups: tuple[str, ...] = ()

    @classmethod
    def new(cls, name: str, *groups: str) -> TokenUser:
        return cls(name, secrets.token_hex(24), tuple(groups))

    def csv_line(self, uid: str) -> str:
        # token,user,uid,"group1,group2": the API server's static token file format.
        groups = f',"{",".join(self.groups)}"' if self.groups else ""
        return f"{self.token},{self.name},{uid}{groups}"


@attrs.frozen
class Credentials:
    """The users of one control plane."""

    admin: TokenUser
    controller_manager: TokenUser
    scheduler: TokenUser
    kubelet: TokenUser

    @classmethod
    def generate(cls, admin_token: str | None = None) -> Credentials:
        """Fresh random tokens (the admin's may be given)."""
        admin = TokenUser.new(ADMIN, "system:masters")
        if admin_token is not None:
            if not admin_token or any(c in admin_token for c in ',"\r\n '):
                raise ValueError("the admin token must be non-empty, without commas, quotes or blanks")
            admin = TokenUser(ADMIN, admin_token, admin.groups)
        return cls(
            admin=admin,
            controller_manager=TokenUser.new(CONTROLLER_MANAGER),
            scheduler=TokenUser.new(SCHEDULER),
            kubelet=TokenUser.new(KUBELET, NODES_GROUP),
        )

    @property
    def users(self) -> Sequence[TokenUser]:
        return (self.admin, self.controller_manager, self.scheduler, self.kubelet)

    def write_token_file(self, path: Path) -> Path:
        lines = [user.csv_line(f"uid-{index}") for index, user in enumerate(self.users)]
        write_private(path, "\n".join(lines) + "\n")
        return path


def kubelet_role_binding(user: TokenUser) -> dict[str, Any]:
    """The ClusterRoleBinding of the ``system:node`` ClusterRole to the kubelet's user."""
    return cluster_role_binding("k8s-backend:process-kubelet", "system:node", user.name)


def kubelet_client_role_binding() -> dict[str, Any]:
    """The ClusterRoleBinding of ``system:kubelet-api-admin`` to :data:`KUBELET_CLIENT`."""
    return cluster_role_binding("k8s-backend:kube-apiserver-kubelet-client", "system:kubelet-api-admin",
                                KUBELET_CLIENT)  # fmt: skip


def cluster_role_binding(name: str, role: str, user: str) -> dict[str, Any]:
    """A ClusterRoleBinding ``name`` of the ClusterRole ``role`` to the User ``user``."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }


def kubeconfig_dict(server: str, ca_pem: bytes, user: TokenUser, context: str) -> dict[str, Any]:
    """A kubeconfig with the CA inline and a bearer token, as kubectl and the Python client read it."""
    return kubeconfig_document(server, user.token, context=context, user=user.name, ca_pem=ca_pem)


def write_kubeconfig(path: Path, server: str, ca_pem: bytes, user: TokenUser, context: str) -> Path:
    write_private(path, yaml.safe_dump(kubeconfig_dict(server, ca_pem, user, context), sort_keys=False))
    return path
