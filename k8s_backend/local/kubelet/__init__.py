"""A process kubelet for local tests: pods of the in-memory API run as local processes.

- :class:`ProcessKubelet`: watches pods, schedules them on simulated :class:`Node` s and runs containers,
  translating Spark's executor and driver containers into local JVM commands on pyspark's jars.
- :class:`ImagePolicy`: which images "pull"; unknown ones wait in ErrImagePull / ImagePullBackOff.
- :class:`HostEnvironment`: where Spark, Java and Python are on this machine.
"""

from __future__ import annotations

from k8s_backend.local.kubelet.container import HostEnvironment, LocalCommand, translate
from k8s_backend.local.kubelet.images import ImagePolicy
from k8s_backend.local.kubelet.kubelet import ProcessKubelet
from k8s_backend.local.kubelet.nodes import Node, NodePool, Resources

__all__ = [
    "HostEnvironment",
    "ImagePolicy",
    "LocalCommand",
    "Node",
    "NodePool",
    "ProcessKubelet",
    "Resources",
    "translate",
]
