"""Modules that moved keep their old import paths, as the same module objects; the public names stay."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from k8s_backend._moved import MOVED, new_name


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_imports_the_moved_module_itself(old: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(MOVED[old])


def test_a_moved_packages_submodules_follow_it() -> None:
    assert new_name("k8s_backend.executors.tracker") == "k8s_backend.tracking.tracker"
    assert new_name("k8s_backend.scheduling.clock") == "k8s_backend.common.clock"
    assert new_name("k8s_backend.kube.port") is None
    from k8s_backend.executors.tracker import ExecutorTracker

    from k8s_backend.tracking.tracker import ExecutorTracker as Moved

    assert ExecutorTracker is Moved


def test_the_public_names_work_from_a_fresh_interpreter() -> None:
    code = """
import k8s_backend
from k8s_backend import ConfigError, KubernetesClusterSchedulerBackend, KubernetesConf
from k8s_backend.testing import DeterministicScheduler, FakeKubernetes, LocalCluster, ManualClock
from k8s_backend.local import LocalCluster as ProductCluster
from k8s_backend.memkube import InMemoryKubernetes
from k8s_backend.testing.fake import FakeKubernetes as OldPath
assert FakeKubernetes is InMemoryKubernetes is OldPath
assert LocalCluster is ProductCluster
assert callable(KubernetesClusterSchedulerBackend.create) and callable(KubernetesConf.from_spark_conf)
assert issubclass(ConfigError, k8s_backend.K8sBackendError)
"""
    subprocess.run([sys.executable, "-c", code], check=True)


def test_one_class_bears_the_backends_name() -> None:
    import k8s_backend
    from k8s_backend.backend import hooks

    assert not hasattr(hooks, "KubernetesClusterSchedulerBackend")
    assert k8s_backend.KubernetesClusterSchedulerBackend.__module__ == "k8s_backend.assembly.wiring"
