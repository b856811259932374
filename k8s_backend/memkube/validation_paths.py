"""The API server's checks of paths and class names that the fakes once let through (found by an audit
against kube-apiserver v1.37; see tests/contract/test_contract_validation.py): a volume mount's
``subPath``/``subPathExpr`` must stay inside its volume, an NFS volume's path must be absolute, and a
claim's ``storageClassName`` must be a DNS-1123 subdomain."""

from __future__ import annotations

from typing import Any

from k8s_backend.kube.names import dns1123_subdomain_errors
from k8s_backend.kube.port import Obj
from k8s_backend.memkube.errors import INVALID, FieldError


def pod_path_errors(spec: dict[str, Any]) -> list[FieldError]:
    """Sub-paths of every container's mounts and the pod's NFS volume paths."""
    errors: list[FieldError] = []
    for i, volume in enumerate(spec.get("volumes") or []):
        nfs = volume.get("nfs") if isinstance(volume, dict) else None
        if isinstance(nfs, dict) and isinstance(nfs.get("path"), str) and not nfs["path"].startswith("/"):
            errors.append(
                FieldError(f"spec.volumes[{i}].nfs.path", INVALID, nfs["path"], "must be an absolute path")
            )
    for list_name in ("initContainers", "containers"):
        for c, container in enumerate(spec.get(list_name) or []):
            mounts = container.get("volumeMounts") if isinstance(container, dict) else None
            for mount in mounts or []:
                if isinstance(mount, dict):
                    # Without the mount's index: the real server's path reads so (v1.37).
                    errors += _sub_path_errors(mount, f"spec.{list_name}[{c}].volumeMounts")
    return errors


def _sub_path_errors(mount: dict[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for field in ("subPath", "subPathExpr"):
        value = mount.get(field)
        if not isinstance(value, str) or not value:
            continue
        if value.startswith("/"):
            errors.append(FieldError(f"{path}.{field}", INVALID, value, "must be a relative path"))
        if ".." in value.replace("\\", "/").split("/"):
            errors.append(FieldError(f"{path}.{field}", INVALID, value, "must not contain '..'"))
    return errors


def claim_errors(claim: Obj) -> list[FieldError]:
    """A PersistentVolumeClaim's storage class name."""
    spec = claim.get("spec")
    name = spec.get("storageClassName") if isinstance(spec, dict) else None
    if not isinstance(name, str) or not name:
        return []  # unset or "" (no class) are both allowed
    return [FieldError("spec.storageClassName", INVALID, name, p) for p in dns1123_subdomain_errors(name)]
