"""The driver Service's IP family and readiness settings (Spark's DriverServiceFeatureStep).

As Spark 4.x, ``ipFamilyPolicy`` (``SingleStack`` by default) and ``ipFamilies`` (``IPv4`` by default)
are always written, and ``publishNotReadyAddresses`` when set.
"""

from __future__ import annotations

from collections.abc import Mapping

from k8s_backend.conf.units import parse_bool
from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import Obj

IP_FAMILY_POLICY_KEY = "spark.kubernetes.driver.service.ipFamilyPolicy"
IP_FAMILIES_KEY = "spark.kubernetes.driver.service.ipFamilies"
PUBLISH_NOT_READY_KEY = "spark.kubernetes.driver.service.publishNotReadyAddresses"
IP_FAMILY_POLICIES = ("SingleStack", "PreferDualStack", "RequireDualStack")
IP_FAMILIES = ("IPv4", "IPv6")


def service_spec_settings(properties: Mapping[str, str]) -> Obj:
    """The Service spec fields these keys set; a :class:`ConfigError` naming the key for a bad value."""
    policy = properties.get(IP_FAMILY_POLICY_KEY, "SingleStack")
    if policy not in IP_FAMILY_POLICIES:
        raise ConfigError(
            f"{IP_FAMILY_POLICY_KEY}={policy} is invalid: use one of {', '.join(IP_FAMILY_POLICIES)}",
            key=IP_FAMILY_POLICY_KEY,
            value=policy,
        )
    raw = properties.get(IP_FAMILIES_KEY, "IPv4")
    families = [f.strip() for f in raw.split(",") if f.strip()]
    bad = [f for f in families if f not in IP_FAMILIES]
    if not families or bad or len(set(families)) != len(families):
        raise ConfigError(
            f"{IP_FAMILIES_KEY}={raw} is invalid: a comma-separated list of IPv4 and IPv6, each at most once",
            key=IP_FAMILIES_KEY,
            value=raw,
        )
    if policy == "SingleStack" and len(families) > 1:
        # The API server refuses it too, after the pod exists: say it before anything is created.
        raise ConfigError(
            f"{IP_FAMILIES_KEY}={raw} lists two families but {IP_FAMILY_POLICY_KEY} is SingleStack: "
            "set the policy to PreferDualStack or RequireDualStack, or list one family",
            key=IP_FAMILIES_KEY,
            value=raw,
        )
    settings: Obj = {"ipFamilyPolicy": policy, "ipFamilies": families}
    if PUBLISH_NOT_READY_KEY in properties:
        settings["publishNotReadyAddresses"] = parse_bool(
            properties[PUBLISH_NOT_READY_KEY], key=PUBLISH_NOT_READY_KEY
        )
    return settings
