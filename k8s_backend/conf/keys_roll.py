"""Keys table, executor rolling: Spark's ExecutorRollPlugin keys, acted on by k8s_backend's roller.

Rolling acts, as in Spark, only when ``spark.plugins`` lists :data:`ROLL_PLUGIN` and ``rollInterval`` is
positive; the cross-key rules (plugin listed, decommissioning on, one policy source) are in
:mod:`k8s_backend.conf.parse_roll`.
"""

from __future__ import annotations

import re

from k8s_backend.conf.spec import Check, Key, Kind, at_least

ROLL_PLUGIN = "org.apache.spark.scheduler.cluster.k8s.ExecutorRollPlugin"
INTERVAL_KEY = "spark.kubernetes.executor.rollInterval"
POLICY_KEY = "spark.kubernetes.executor.rollPolicy"
MIN_TASKS_KEY = "spark.kubernetes.executor.minTasksPerExecutorBeforeRolling"
HOOK_KEY = "spark.kubernetes.executor.rollPolicyHook"

# The names of k8s_backend.lifecycle.roll_policy.RollPolicy (conf/ does not import lifecycle/).
POLICIES = (
    "ID",
    "ADD_TIME",
    "TOTAL_GC_TIME",
    "TOTAL_DURATION",
    "AVERAGE_DURATION",
    "FAILED_TASKS",
    "PEAK_JVM_ONHEAP_MEMORY",
    "PEAK_JVM_OFFHEAP_MEMORY",
    "TOTAL_SHUFFLE_WRITE",
    "DISK_USED",
    "OUTLIER",
    "OUTLIER_NO_FALLBACK",
)

_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"
HOOK_SYNTAX = re.compile(rf"{_DOTTED}:{_DOTTED}")

# Spark upper-cases the value before its check, so the policy is case-insensitive there and here.
_POLICY = Check.that(
    lambda v: v.upper() in POLICIES, f"must be one of {', '.join(POLICIES)} (case-insensitive)"
)
_HOOK = Check.that(
    lambda v: HOOK_SYNTAX.fullmatch(v) is not None,
    "must be `module:function` (e.g. `mypkg.rolling:pick`), a function importable by the driver",
)

ROLL_KEYS: tuple[Key, ...] = (
    Key(
        INTERVAL_KEY,
        Kind.DURATION_S,
        "0s",
        "Executor rolling: every this often one executor is decommissioned (Spark's graceful path, the "
        "executor target kept, so a replacement comes). Acts only when `spark.plugins` lists "
        f"`{ROLL_PLUGIN}` and `spark.decommission.enabled` is true (else a ConfigError); `0`: off. Needs "
        "a driver (for the executors' metrics). See docs/executors.md, Executor rolling.",
        field="roll.interval",
        check=at_least(0, "must be 0 (off) or a positive time value"),
    ),
    Key(
        POLICY_KEY,
        Kind.STRING,
        "OUTLIER",
        "Which executor is rolled: `ID` (smallest id), `ADD_TIME` (oldest), `TOTAL_GC_TIME`, "
        "`TOTAL_DURATION`, `AVERAGE_DURATION`, `FAILED_TASKS`, `PEAK_JVM_ONHEAP_MEMORY`, "
        "`PEAK_JVM_OFFHEAP_MEMORY`, `TOTAL_SHUFFLE_WRITE`, `DISK_USED` (largest), `OUTLIER` (outliers, "
        "else the largest total duration) or `OUTLIER_NO_FALLBACK`.",
        field="roll.policy",
        check=_POLICY,
    ),
    Key(
        MIN_TASKS_KEY,
        Kind.INT,
        "0",
        "Executors that ran fewer tasks than this are not rolled.",
        field="roll.min_tasks",
        check=at_least(0, "must be 0 or more"),
    ),
    Key(
        HOOK_KEY,
        Kind.STRING,
        None,
        "A Python roll policy instead of `rollPolicy`: `module:function`, imported by the driver at start "
        "(an import error is a ConfigError). The function gets the candidate executors' summaries "
        "(`k8s_backend.lifecycle.roll_policy.ExecutorSummary`) and returns the id to roll, or None.",
        field="roll.hook",
        check=_HOOK,
        has_spark_entry=False,
    ),
)
