"""User feature steps named in ``spark.kubernetes.executor.pod.featureSteps``.

Each entry is a Python class path, ``package.module.ClassName`` or ``package.module:ClassName``. The
class is instantiated with no arguments, or with the :class:`KubernetesConf` when its constructor takes
one, and must satisfy :class:`k8s_backend.pods.step.FeatureStep`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Sequence
from typing import TypeGuard

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.errors import ConfigError
from k8s_backend.pods.step import FeatureStep

FEATURE_STEPS_KEY = "spark.kubernetes.executor.pod.featureSteps"
_JVM_PACKAGE_ROOTS = ("org", "com", "io", "net")
_EXPECTED = (
    "a Python class path ('package.module.ClassName' or 'package.module:ClassName') of a class with "
    "configure_pod(pod, ctx) and additional_resources(ctx) methods "
    "(see k8s_backend.pods.step.FeatureStep and BaseFeatureStep)"
)


def _error(entry: str, problem: str, cause: BaseException | None = None) -> ConfigError:
    error = ConfigError(
        f"{FEATURE_STEPS_KEY} entry {entry!r}: {problem}; expected {_EXPECTED}",
        key=FEATURE_STEPS_KEY,
        value=entry,
    )
    error.__cause__ = cause
    return error


def _split(entry: str) -> tuple[str, str]:
    if ":" in entry:
        module, _, attr = entry.partition(":")
    else:
        module, _, attr = entry.rpartition(".")
    if not module or not attr:
        raise _error(entry, "not a class path")
    return module, attr


def _looks_like_jvm_class(module: str, exc: ImportError) -> bool:
    missing = getattr(exc, "name", None) or ""
    root = module.split(".")[0]
    return root in _JVM_PACKAGE_ROOTS and missing.split(".")[0] == root


def resolve_step_class(entry: str) -> type:
    """Import the class an entry names."""
    module_name, attr = _split(entry)
    try:
        target: object = importlib.import_module(module_name)
    except ImportError as exc:
        if _looks_like_jvm_class(module_name, exc):
            raise _error(
                entry,
                "this looks like a JVM class; k8s_backend builds executor pods in Python, so feature "
                "steps must be Python classes (port the step's logic to a Python class)",
                exc,
            ) from exc
        raise _error(entry, f"cannot import module {module_name!r} ({exc})", exc) from exc
    except Exception as exc:  # the module itself failed while importing
        raise _error(entry, f"importing module {module_name!r} failed ({exc!r})", exc) from exc
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as exc:
            raise _error(entry, f"module {module_name!r} has no attribute {attr!r}", exc) from exc
    if not inspect.isclass(target):
        raise _error(entry, f"{attr!r} is a {type(target).__name__}, not a class")
    return target


def _takes_conf(cls: type) -> bool:
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return False
    try:
        signature.bind(object())
    except TypeError:
        return False
    return True


def instantiate_step(entry: str, conf: KubernetesConf) -> FeatureStep:
    """Import, construct and check one user step."""
    cls = resolve_step_class(entry)
    try:
        step = cls(conf) if _takes_conf(cls) else cls()
    except Exception as exc:
        raise _error(entry, f"constructing {cls.__qualname__} failed ({exc!r})", exc) from exc
    if not is_feature_step(step):
        raise _error(entry, f"{cls.__qualname__} is not a feature step")
    return step


def is_feature_step(step: object) -> TypeGuard[FeatureStep]:
    """Whether ``step`` has callable ``configure_pod`` and ``additional_resources`` methods."""
    return (
        isinstance(step, FeatureStep)
        and callable(getattr(step, "configure_pod", None))
        and callable(getattr(step, "additional_resources", None))
    )


def load_user_steps(entries: Sequence[str], conf: KubernetesConf) -> list[FeatureStep]:
    """Instantiate every configured user step, in order."""
    return [instantiate_step(entry.strip(), conf) for entry in entries if entry.strip()]
