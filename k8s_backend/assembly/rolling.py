"""The executor roller's assembly: its policy (Spark's name, the ``rollPolicyHook`` key's function, or a
callable given to ``create``) and its collaborators. Every check runs before anything starts."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

from k8s_backend.common import Clock, Scheduler
from k8s_backend.conf.keys_roll import HOOK_KEY, INTERVAL_KEY, ROLL_PLUGIN
from k8s_backend.conf.model import RollConf
from k8s_backend.errors import ConfigError
from k8s_backend.lifecycle.driver_port import DriverEndpoint
from k8s_backend.lifecycle.executor_events import ExecutorEvents
from k8s_backend.lifecycle.roll_policy import PolicyHook, RollPolicy
from k8s_backend.lifecycle.roller import ExecutorRoller, RollSettings


def import_hook(name: str) -> PolicyHook:
    """The function ``module:function`` names; a ConfigError naming the key when it cannot be had."""
    module_name, _, attribute = name.partition(":")
    try:
        found: object = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except Exception as error:  # any import failure is the user's configuration to fix
        raise ConfigError(
            f"{HOOK_KEY}={name} cannot be loaded ({error!r}); name a function the driver can import as "
            "module:function",
            key=HOOK_KEY,
            value=name,
        ) from error
    if not callable(found):
        raise ConfigError(
            f"{HOOK_KEY}={name} is not a function but a {type(found).__name__}; name a function taking the "
            "executor summaries and returning an executor id or None",
            key=HOOK_KEY,
            value=name,
        )
    hook: PolicyHook = found
    return hook


def roll_policy(conf: RollConf, hook: PolicyHook | None) -> RollPolicy | PolicyHook:
    """The policy rolls use: ``hook`` (given to create), else the key's hook, else Spark's named policy."""
    if hook is not None and conf.hook is not None:
        raise ConfigError(
            f"A roll policy was given to create() and {HOOK_KEY}={conf.hook} names another; keep one of them",
            key=HOOK_KEY,
            value=conf.hook,
        )
    if hook is not None:
        return hook
    if conf.hook is not None:
        return import_hook(conf.hook)
    return RollPolicy(conf.policy)


def check_roll_policy_use(conf: RollConf, hook: PolicyHook | None, has_driver: bool) -> None:
    """Refuse a roll policy given while rolling is off, and rolling without a driver (no metrics, and no
    graceful decommission to roll with)."""
    if hook is not None and not conf.enabled:
        raise ConfigError(
            f"A roll policy was given to create() but executor rolling is off; list {ROLL_PLUGIN} in "
            f"spark.plugins with a positive {INTERVAL_KEY}, or give no roll policy",
            key=INTERVAL_KEY,
        )
    if conf.enabled and not has_driver:
        raise ConfigError(
            f"{INTERVAL_KEY}={conf.interval:g}s: executor rolling needs a driver (its executors' metrics and "
            "its graceful decommission), and this backend was created without one (driver=None); remove "
            f"{ROLL_PLUGIN} from spark.plugins",
            key=INTERVAL_KEY,
            value=conf.interval,
        )


def roll_settings(conf: RollConf, hook: PolicyHook | None, *, has_driver: bool) -> RollSettings | None:
    """The roller's settings, or None when rolling is off; every ConfigError of rolling is raised here."""
    check_roll_policy_use(conf, hook, has_driver)
    if not conf.enabled:
        return None
    return RollSettings(conf.interval, roll_policy(conf, hook), conf.min_tasks)


def build_roller(
    settings: RollSettings | None,
    *,
    scheduler: Scheduler,
    clock: Clock,
    driver: DriverEndpoint | None,
    target: Callable[[], int],
    departing: Callable[[], frozenset[int]] | None,
    events: ExecutorEvents,
    label: Callable[[Sequence[str]], None],
) -> ExecutorRoller | None:
    """The roller, or None when rolling is off."""
    if settings is None or driver is None:  # (roll_settings refused rolling without a driver)
        return None
    return ExecutorRoller(
        scheduler,
        clock,
        settings=settings,
        driver=driver,
        target=target,
        departing=departing,
        events=events,
        label=label,
    )
