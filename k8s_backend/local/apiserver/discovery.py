"""The discovery documents clients read before (or instead of) knowing the API: /version, /api, /apis.

Enough for the official Python client (including its dynamic client) and fabric8 to find the core
group and the Volcano ``scheduling.volcano.sh/v1beta1`` group.
"""

from __future__ import annotations

from k8s_backend.kube.port import KNOWN_RESOURCES, Obj, Resource

VERSION: Obj = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.0+k8s-backend",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.22.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
_SHORT_NAMES = {
    "pods": ["po"],
    "configmaps": ["cm"],
    "services": ["svc"],
    "persistentvolumeclaims": ["pvc"],
    "namespaces": ["ns"],
    "podgroups": ["pg", "podgroup-v1beta1"],
}


def document(path: str) -> Obj | None:
    """The discovery document at ``path``, or None if there is none."""
    if path == "/version":
        return VERSION
    if path == "/api":
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
        }
    if path == "/apis":
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g) for g in _groups()]}
    if path == "/api/v1":
        return _resource_list("v1", [r for r in KNOWN_RESOURCES if not r.group])
    parts = path.strip("/").split("/")
    if parts[0] != "apis" or parts[1:2] == [] or parts[1] not in _groups():
        return None
    group = parts[1]
    if len(parts) == 2:
        return {"kind": "APIGroup", "apiVersion": "v1", **_group(group)}
    resources = [r for r in KNOWN_RESOURCES if r.group == group and r.version == parts[2]]
    return _resource_list(f"{group}/{parts[2]}", resources) if resources else None


def _groups() -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for resource in KNOWN_RESOURCES:
        if resource.group and resource.version not in groups.setdefault(resource.group, []):
            groups[resource.group].append(resource.version)
    return groups


def _group(name: str) -> Obj:
    versions = [{"groupVersion": f"{name}/{v}", "version": v} for v in _groups()[name]]
    return {"name": name, "versions": versions, "preferredVersion": versions[0]}


def _resource_list(group_version: str, resources: list[Resource]) -> Obj:
    entries: list[Obj] = []
    for r in resources:
        entries.append(
            {
                "name": r.plural,
                "singularName": r.kind.lower(),
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": _VERBS,
                "shortNames": _SHORT_NAMES.get(r.plural, []),
            }
        )
        if r.plural in ("pods", "podgroups", "persistentvolumeclaims", "services", "namespaces"):
            entries.append(
                {
                    "name": f"{r.plural}/status",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": entries,
    }
