"""The cross-key rules of executor rolling (Spark's ExecutorRollPlugin keys).

Spark's plugin acts only when listed in ``spark.plugins``, with a positive ``rollInterval`` and
``spark.decommission.enabled``; otherwise it disables itself with a warning. Under ``pyk8s://`` a roll key
that would do nothing is a leftover the user believes acts, so each such case is a :class:`ConfigError`
naming the key and the fix instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from k8s_backend.conf.keys_roll import HOOK_KEY, INTERVAL_KEY, MIN_TASKS_KEY, POLICY_KEY, ROLL_PLUGIN
from k8s_backend.errors import ConfigError

PLUGINS_KEY = "spark.plugins"
DECOMMISSION_KEY = "spark.decommission.enabled"


def plugin_listed(props: Mapping[str, str]) -> bool:
    """Whether ``spark.plugins`` lists Spark's ExecutorRollPlugin."""
    return ROLL_PLUGIN in (p.strip() for p in props.get(PLUGINS_KEY, "").split(","))


def check_roll(props: Mapping[str, str], values: Mapping[str, Any]) -> None:
    """Refuse roll keys that would not act, and a policy given twice (``values``: the parsed fields)."""
    listed = plugin_listed(props)
    if not listed:
        for name in (INTERVAL_KEY, POLICY_KEY, MIN_TASKS_KEY, HOOK_KEY):
            if name in props:
                raise ConfigError(
                    f"{name}={props[name]} does nothing: executor rolling acts only when {PLUGINS_KEY} lists "
                    f"{ROLL_PLUGIN} (as in Spark); add the plugin to {PLUGINS_KEY}, or remove the key",
                    key=name,
                    value=props[name],
                )
        return
    if values.get("roll.interval", 0.0) <= 0:
        raise ConfigError(
            f"{PLUGINS_KEY} lists {ROLL_PLUGIN} but {INTERVAL_KEY} is "
            f"{props.get(INTERVAL_KEY, 'unset (0)')}, so nothing would roll (Spark disables the plugin); set "
            f"{INTERVAL_KEY} to a positive interval (e.g. 10min), or remove the plugin",
            key=INTERVAL_KEY,
            value=props.get(INTERVAL_KEY),
        )
    if not values.get("executor.decommission_enabled", False):
        raise ConfigError(
            f"{PLUGINS_KEY} lists {ROLL_PLUGIN} but {DECOMMISSION_KEY} is not true, so nothing would roll "
            f"(executors are rolled by graceful decommission; Spark disables the plugin); set "
            f"{DECOMMISSION_KEY}=true, or remove the plugin",
            key=DECOMMISSION_KEY,
            value=props.get(DECOMMISSION_KEY),
        )
    if HOOK_KEY in props and POLICY_KEY in props:
        raise ConfigError(
            f"{POLICY_KEY}={props[POLICY_KEY]} and {HOOK_KEY}={props[HOOK_KEY]} both choose the executor to "
            f"roll; keep one of them",
            key=POLICY_KEY,
            value=props[POLICY_KEY],
        )
