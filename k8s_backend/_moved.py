"""Import paths of modules that moved, kept working: ``import k8s_backend.wiring`` still imports the module
now at ``k8s_backend.assembly.wiring`` (the same module object, under both names)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

# Old module (or package) -> where it lives now. A package's submodules follow it.
MOVED: dict[str, str] = {
    "k8s_backend.application": "k8s_backend.assembly.application",
    "k8s_backend.backend_state": "k8s_backend.backend.state",
    "k8s_backend.driver": "k8s_backend.lifecycle.driver_port",
    "k8s_backend.executor_ops": "k8s_backend.lifecycle.executor_ops",
    "k8s_backend.executors": "k8s_backend.tracking",
    "k8s_backend.failures": "k8s_backend.common.failure_sink",
    "k8s_backend.heartbeat": "k8s_backend.backend.heartbeat",
    "k8s_backend.recovery": "k8s_backend.backend.recovery",
    "k8s_backend.registration_publisher": "k8s_backend.backend.registration_publisher",
    "k8s_backend.scheduling": "k8s_backend.common",
    "k8s_backend.scheduling.clock": "k8s_backend.common.clock",
    "k8s_backend.scheduling.executor": "k8s_backend.common.scheduler",
    "k8s_backend.signals": "k8s_backend.common.signals",
    "k8s_backend.start_plan": "k8s_backend.assembly.start_plan",
    "k8s_backend.state_machine": "k8s_backend.common.state_machine",
    "k8s_backend.stop_order": "k8s_backend.assembly.stop_steps",
    "k8s_backend.stop_sequence": "k8s_backend.common.stop_sequence",
    "k8s_backend.testing.fake": "k8s_backend.memkube.api",
    **{
        f"k8s_backend.testing.fake_{name}": f"k8s_backend.memkube.{name}"
        for name in (
            "decode", "defaults", "deletion", "errors", "fault_controls", "faults", "patch", "selectors",
            "server", "store", "validation", "validation_paths", "watch",
        )
    },
    "k8s_backend.wiring": "k8s_backend.assembly.wiring",
    # cli/ by concept (cli.submit and cli.apps are packages now: their old modules have no alias)
    "k8s_backend.cli.app_commands": "k8s_backend.cli.apps.commands",
    "k8s_backend.cli.app_target": "k8s_backend.cli.apps.target",
    "k8s_backend.cli.cluster_api": "k8s_backend.cli.common.cluster_api",
    "k8s_backend.cli.console": "k8s_backend.cli.common.console",
    "k8s_backend.cli.deps": "k8s_backend.cli.common.deps",
    "k8s_backend.cli.driver_credentials": "k8s_backend.cli.submit.driver_credentials",
    "k8s_backend.cli.driver_files": "k8s_backend.cli.submit.driver_files",
    "k8s_backend.cli.driver_log": "k8s_backend.cli.common.driver_log",
    "k8s_backend.cli.driver_pod": "k8s_backend.cli.submit.driver_pod",
    "k8s_backend.cli.driver_reach": "k8s_backend.cli.submit.driver_reach",
    "k8s_backend.cli.driver_sizing": "k8s_backend.cli.submit.driver_sizing",
    "k8s_backend.cli.driver_token": "k8s_backend.cli.common.driver_token",
    "k8s_backend.cli.errors": "k8s_backend.cli.common.errors",
    "k8s_backend.cli.executor_preview": "k8s_backend.cli.submit.executor_preview",
    "k8s_backend.cli.executor_table": "k8s_backend.cli.apps.executor_table",
    "k8s_backend.cli.gc": "k8s_backend.cli.apps.gc",
    "k8s_backend.cli.hints": "k8s_backend.cli.submit.hints",
    "k8s_backend.cli.options": "k8s_backend.cli.common.options",
    "k8s_backend.cli.pod_commands": "k8s_backend.cli.apps.pod_commands",
    "k8s_backend.cli.properties": "k8s_backend.cli.common.properties",
    "k8s_backend.cli.registrations": "k8s_backend.cli.apps.registrations",
    "k8s_backend.cli.status_watch": "k8s_backend.cli.common.status_watch",
    "k8s_backend.cli.submission": "k8s_backend.cli.submit.submission",
    "k8s_backend.cli.submit_args": "k8s_backend.cli.common.submit_args",
    "k8s_backend.cli.submit_client": "k8s_backend.cli.submit.client_mode",
    "k8s_backend.cli.submit_cluster": "k8s_backend.cli.submit.cluster_mode",
    "k8s_backend.cli.submit_connection": "k8s_backend.cli.submit.connection",
    "k8s_backend.cli.timeline_page": "k8s_backend.cli.apps.timeline_page",
    "k8s_backend.cli.uploads": "k8s_backend.cli.submit.uploads",
    "k8s_backend.cli.uris": "k8s_backend.cli.submit.uris",
}


def new_name(old: str) -> str | None:
    """Where the module once named ``old`` lives now, or None if it did not move."""
    if old in MOVED:
        return MOVED[old]
    package = old.rpartition(".")[0]
    while package:
        if package in MOVED:
            return f"{MOVED[package]}.{old[len(package) + 1:]}"
        package = package.rpartition(".")[0]
    return None


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self._target = target

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        return importlib.import_module(self._target)

    def exec_module(self, module: ModuleType) -> None:
        # The module ran under its new name already; the old name is only another key in sys.modules.
        pass


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds a moved module under its old name and hands back the module itself."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        target_name = new_name(fullname)
        if target_name is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(target_name))


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())
