"""The pod objects the snapshot store keeps: what the backend reads of a pod, in shared strings.

At 10,000 executors the decoded pods are nearly all of the driver's memory for them (~17 KB each as the
watch hands them over, for ~3 KB of JSON): every event is decoded on its own, so each pod has its own copy
of every key and of values such as ``"True"``. :func:`compact_pod` keeps:

- ``metadata`` whole, except ``managedFields`` (written by the API server for server-side apply);
- ``spec`` whole, except that each container keeps only ``name``, ``image``, ``imagePullPolicy`` and
  ``resources`` (its env, mounts, ports, command and probes are the backend's own output, never read back),
  and the service account token volume the API server adds to every pod (``kube-api-access-<random>``: the
  same projected volume under a name of its own in each pod, so it could not be kept once; no reader
  looks at it, the claims' readers look at ``persistentVolumeClaim`` volumes);
- ``status`` whole, except ``hostIPs``/``podIPs`` (copies of ``hostIP``/``podIP``), each condition's
  ``lastProbeTime``, the conditions no reader looks at (``Initialized``, ``PodReadyToStartContainers``,
  ``ContainersReady``: the kubelet's own steps) and each container status' ``imageID``/``containerID``;

and it swaps keys and common values for one shared copy from a fixed vocabulary (no table grows with
the pods it sees). The parts of a spec every pod of an application repeats (containers, volumes, the
tolerations the API server adds, affinity, node selector), and its owner references (the driver pod, or a
client-mode driver's heartbeat Lease), are kept once per store.
Measured on kube-apiserver v1.37.2's own pods (``benchmarks/real_scale.py``): 4.4 KB kept per executor,
9.4 KB before the last two rules.
The states' rules, the allocator, the lifecycle decisions and the tracker read only
kept fields; a reader that needs a dropped one must read the pod from the API.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from k8s_backend.kube.port import Obj

DROPPED_METADATA = frozenset({"managedFields"})
CONTAINER_KEYS = ("name", "image", "imagePullPolicy", "resources")
DROPPED_STATUS = frozenset({"hostIPs", "podIPs"})
DROPPED_CONDITION = frozenset({"lastProbeTime"})
# Conditions no reader of the store looks at (PodScheduled, Ready, DisruptionTarget and others are kept).
UNREAD_CONDITIONS = frozenset({"Initialized", "PodReadyToStartContainers", "ContainersReady"})
DROPPED_CONTAINER_STATUS = frozenset({"imageID", "containerID"})
# The ServiceAccount admission plugin's projected token volume: "kube-api-access-" and 5 random characters.
SERVICE_ACCOUNT_VOLUME = "kube-api-access-"
# Spec parts that are the same in every executor pod of an application: kept once (see PodCompactor).
SHARED_SPEC_PARTS = ("tolerations", "affinity", "nodeSelector", "imagePullSecrets", "securityContext")

_VOCABULARY = (
    # Pod fields.
    "apiVersion", "kind", "metadata", "spec", "status", "v1", "Pod",
    "name", "namespace", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
    "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers", "generateName",
    "hostname", "subdomain", "restartPolicy", "terminationGracePeriodSeconds", "volumes", "containers",
    "initContainers", "nodeName", "nodeSelector", "schedulerName", "serviceAccountName", "tolerations",
    "priorityClassName", "priority", "affinity", "securityContext", "imagePullSecrets", "enableServiceLinks",
    "dnsPolicy", "ClusterFirst", "ClusterFirstWithHostNet", "Default", "default-scheduler", "serviceAccount",
    "preemptionPolicy", "PreemptLowerPriority",
    "image", "imagePullPolicy", "resources", "requests", "limits", "memory", "cpu", "ephemeral-storage",
    "emptyDir", "configMap", "secret", "persistentVolumeClaim", "claimName", "hostPath", "path",
    "phase", "conditions", "qosClass", "hostIP", "podIP", "startTime", "containerStatuses",
    "initContainerStatuses", "reason", "message", "nominatedNodeName",
    "type", "lastTransitionTime", "True", "False", "Unknown",
    "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled",
    "ready", "started", "restartCount", "state", "lastState", "running", "waiting", "terminated",
    "startedAt", "finishedAt", "exitCode", "signal",
    "Pending", "Running", "Succeeded", "Failed", "Never", "OnFailure", "Always", "IfNotPresent",
    "Burstable", "Guaranteed", "BestEffort", "default", "ContainerCreating", "PodInitializing",
    "Error", "Completed", "OOMKilled", "Unschedulable", "Evicted", "ErrImagePull", "ImagePullBackOff",
    # Spark's labels and names.
    "spark-app-selector", "spark-app-name", "spark-role", "spark-exec-id", "spark-exec-resourceprofile-id",
    "spark-exec-inactive", "spark-version", "executor", "driver", "spark-kubernetes-executor", "0",
)  # fmt: skip


def _vocabulary(words: Iterable[str]) -> dict[str, str]:
    return {word: word for word in words}


_SHARED = _vocabulary(_VOCABULARY)
_shared = _SHARED.get  # the shared copy of a known string; anything else as it is
SHARED_PARTS_LIMIT = 256


def _share(value: Any) -> Any:
    return _shared(value, value) if type(value) is str else value


def _mapping(obj: Any, dropped: frozenset[str] = frozenset()) -> Any:
    """A copy of a flat-ish mapping with shared keys and shared string values (nested values as they are,
    so anything unexpected survives untouched)."""
    if type(obj) is not dict:
        return obj
    return {_shared(k, k): _share(v) for k, v in obj.items() if k not in dropped}


def _container(container: Any) -> Any:
    if type(container) is not dict:
        return container
    kept = {_shared(k, k): _share(container[k]) for k in CONTAINER_KEYS if k in container}
    resources = kept.get("resources")
    if type(resources) is dict:
        kept["resources"] = {_shared(k, k): _mapping(v) for k, v in resources.items()}
    return kept


def _service_account_volume(volume: Any) -> bool:
    return (
        type(volume) is dict
        and "projected" in volume
        and str(volume.get("name", "")).startswith(SERVICE_ACCOUNT_VOLUME)
    )


def _list(items: Any, keep: Any) -> Any:
    return [keep(item) for item in items] if type(items) is list else items


class _Times:
    """One copy of each time string within a pod (its conditions, start and container times agree)."""

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def mapping(self, obj: Any, dropped: frozenset[str] = frozenset()) -> Any:
        if type(obj) is not dict:
            return obj
        seen = self._seen
        return {
            _shared(k, k): (_shared(v, None) or seen.setdefault(v, v)) if type(v) is str else v
            for k, v in obj.items()
            if k not in dropped
        }

    def container_status(self, status: Any) -> Any:
        kept = _mapping(status, DROPPED_CONTAINER_STATUS)
        if type(kept) is dict:
            for key in ("state", "lastState"):
                state = kept.get(key)
                if type(state) is dict:  # {running|waiting|terminated: {...}}
                    kept[key] = {_shared(k, k): self.mapping(v) for k, v in state.items()}
        return kept


class PodCompactor:
    """Makes the compact pods of one store (see the module docstring).

    Parts that are the same in every executor pod of an application (the containers and the volumes of
    a spec) are kept once: the compactor remembers up to ``SHARED_PARTS_LIMIT`` of them and starts over
    when it has seen more. Compact pods therefore share objects: nobody may change a stored pod.
    """

    def __init__(self) -> None:
        self._parts: dict[str, Any] = {}

    def compact(self, pod: Obj) -> Obj:
        """The part of ``pod`` the store keeps; ``pod`` itself is not changed."""
        times = _Times()
        compact: Obj = {}
        for key, value in pod.items():
            if key == "metadata":
                value = _mapping(value, DROPPED_METADATA)
                if type(value) is dict and type(value.get("labels")) is dict:
                    value["labels"] = _mapping(value["labels"])
                if type(value) is dict and "creationTimestamp" in value:
                    value["creationTimestamp"] = times.mapping({"t": value["creationTimestamp"]})["t"]
                if type(value) is dict and "ownerReferences" in value:
                    value["ownerReferences"] = self._once(_list(value["ownerReferences"], _mapping))
            elif key == "spec":
                value = self._spec(value)
            elif key == "status":
                value = self._status(value, times)
            else:
                value = _share(value)
            compact[_shared(key, key)] = value
        return compact

    def _spec(self, spec: Any) -> Any:
        kept = _mapping(spec)
        if type(kept) is dict:
            if type(kept.get("volumes")) is list:
                kept["volumes"] = [v for v in kept["volumes"] if not _service_account_volume(v)]
            for key in ("containers", "initContainers", "volumes"):
                if key in kept:
                    keep = _mapping if key == "volumes" else _container
                    kept[key] = self._once(_list(kept[key], keep))
            for key in SHARED_SPEC_PARTS:
                if key in kept:
                    kept[key] = self._once(kept[key])
        return kept

    def _status(self, status: Any, times: _Times) -> Any:
        kept = times.mapping(status, DROPPED_STATUS)
        if type(kept) is dict:
            if "conditions" in kept:
                kept["conditions"] = [
                    times.mapping(c, DROPPED_CONDITION)
                    for c in kept["conditions"]
                    if type(c) is not dict or c.get("type") not in UNREAD_CONDITIONS
                ] if type(kept["conditions"]) is list else kept["conditions"]  # fmt: skip
            for key in ("containerStatuses", "initContainerStatuses"):
                if key in kept:
                    kept[key] = _list(kept[key], times.container_status)
        return kept

    def _once(self, part: Any) -> Any:
        """The copy of ``part`` kept already, if an equal one was (compared by its text)."""
        text = repr(part)
        kept = self._parts.get(text)
        if kept is None:
            if len(self._parts) >= SHARED_PARTS_LIMIT:
                self._parts.clear()
            kept = self._parts[text] = part
        return kept


def compact_pod(pod: Obj) -> Obj:
    """The part of ``pod`` a store keeps (see the module docstring), shared with no other pod."""
    return PodCompactor().compact(pod)
