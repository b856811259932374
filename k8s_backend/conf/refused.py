"""Spark keys k8s_backend does not act on under ``pyk8s://``, refused instead of silently accepted.

Each rule names the key, says why nothing would happen, and what to do instead. A key that Spark
itself leaves inert at the value given is still refused when set: under ``pyk8s://`` it can only be a
leftover that the user believes acts. (Executor rolling is no longer refused: see
:mod:`k8s_backend.conf.parse_roll`.)
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from k8s_backend.errors import ConfigError

_SCK = "org.apache.spark.scheduler.cluster.k8s."
_RESIZE = (
    "Spark's executor resize plugins are not supported under pyk8s:// (neither checked to act nor "
    "implemented by k8s_backend); remove the key"
)
_KERBEROS = (
    "it is an internal key of Spark 2.4's Kerberos support, which Spark no longer reads; name an existing "
    "delegation-token Secret with spark.kubernetes.kerberos.tokenSecret.name and .itemKey instead, and "
    "remove the key"
)


@attrs.frozen
class Refusal:
    """A key (or, with ``prefix``, a family) refused when ``applies(value)``, with the reason."""

    key: str
    reason: str
    prefix: bool = False

    def matches(self, name: str) -> bool:
        return name.startswith(self.key) if self.prefix else name == self.key


REFUSED: tuple[Refusal, ...] = (
    Refusal("spark.kubernetes.executor.resize", _RESIZE, prefix=True),
    Refusal("spark.kubernetes.executor.pvc.resize", _RESIZE, prefix=True),
    Refusal(
        "spark.kubernetes.allocation.recoveryMode.enabled",
        "Spark 4.2's recovery-mode executors are not implemented by k8s_backend; remove the key",
    ),
    Refusal("spark.kubernetes.kerberos.dt-secret-name", _KERBEROS),
    Refusal("spark.kubernetes.kerberos.dt-secret-key", _KERBEROS),
    Refusal(
        "spark.kubernetes.setSubmitTimeInDriver",
        "Spark's own submit sets it for its cluster-mode drivers; nothing in k8s_backend reads it, remove "
        "the key",
    ),
    Refusal(
        "spark.kubernetes.jars.avoidDownloadSchemes",
        "only Spark's SparkSubmit reads it, for drivers whose master is k8s://; under pyk8s:// nothing "
        "downloads the driver's jars, remove the key",
    ),
    Refusal(
        "spark.kubernetes.resource.type",
        "Spark's own submit sets it for its cluster-mode drivers; nothing in k8s_backend reads it, remove "
        "the key",
    ),
    Refusal(
        "spark.kubernetes.scheduler.volcano.podGroupTemplateJson",
        "it is Spark's internal copy of spark.kubernetes.scheduler.volcano.podGroupTemplateFile; set that "
        "key instead",
    ),
)

PLUGINS_KEY = "spark.plugins"
REFUSED_PLUGINS: dict[str, str] = {
    f"{_SCK}ExecutorResizePlugin": _RESIZE.replace("remove the key", f"remove it from {PLUGINS_KEY}"),
    f"{_SCK}ExecutorPVCResizePlugin": _RESIZE.replace("remove the key", f"remove it from {PLUGINS_KEY}"),
}


def refusal_for(name: str) -> Refusal | None:
    """The rule refusing ``name``, if any."""
    return next((rule for rule in REFUSED if rule.matches(name)), None)


def check_refused(props: Mapping[str, str]) -> None:
    """Raise a :class:`ConfigError` for the first refused key set (in key order) or refused plugin."""
    for name in sorted(props):
        rule = refusal_for(name)
        if rule is not None:
            raise ConfigError(
                f"{name}={props[name]} is not supported under pyk8s://: {rule.reason}",
                key=name,
                value=props[name],
            )
    for plugin in (p.strip() for p in props.get(PLUGINS_KEY, "").split(",")):
        if plugin in REFUSED_PLUGINS:
            raise ConfigError(
                f"{PLUGINS_KEY} lists {plugin}, which does not act under pyk8s://: {REFUSED_PLUGINS[plugin]}",
                key=PLUGINS_KEY,
                value=props[PLUGINS_KEY],
            )
