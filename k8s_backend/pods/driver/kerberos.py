"""Kerberos for the driver (Spark's KerberosConfDriverFeatureStep).

* ``spark.kubernetes.kerberos.krb5.configMapName`` (an existing ConfigMap with a ``krb5.conf`` item) or
  ``spark.kubernetes.kerberos.krb5.path`` (a local file, shipped in a ConfigMap ``<prefix>-krb5-file``
  created with the driver and owned by it) is mounted at ``/etc/krb5.conf``. Unlike Spark, the shipped
  file is always the volume's ``krb5.conf`` item, so a local file of another name mounts too (Spark
  mounts the ``krb5.conf`` subPath of an item named after the file, which is then missing).
* ``spark.kerberos.keytab`` with ``spark.kerberos.principal``: a keytab on the submitting machine (not a
  ``local:`` URI, which is in the image already) is shipped in a Secret ``<prefix>-kerberos-keytab``
  mounted at ``/mnt/secrets/kerberos-keytab``, and the driver's ``spark.kerberos.keytab`` is rewritten to
  its path there, as Spark does.
* Otherwise ``spark.kubernetes.kerberos.tokenSecret.name`` with ``.itemKey`` (an existing Secret of
  delegation tokens) is mounted at ``/mnt/secrets/hadoop-credentials`` and ``HADOOP_TOKEN_FILE_LOCATION``
  names the item.

As Spark, no ``KRB5_CONFIG`` is set: ``/etc/krb5.conf`` is where Kerberos looks by default.

Spark's last case, delegation tokens obtained from the submitter's own Kerberos ticket, needs Hadoop and
a KDC on the submitting machine: it is not done (nothing is mounted then). The driver's login from the
keytab and the tokens' distribution to executors are Spark's own: as in Spark 3+, whose executor builder
has no Kerberos step, the executors get no Kerberos mounts (the driver sends them the tokens).
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from k8s_backend.errors import ConfigError
from k8s_backend.kube.port import Obj
from k8s_backend.pods.constants import SPARK_APP_ID_LABEL
from k8s_backend.pods.driver.owned import owned_name
from k8s_backend.pods.driver.step import DriverContext
from k8s_backend.pods.objects import add_volume_mounts, add_volumes, env_var, upsert_env, volume_mount
from k8s_backend.pods.step import SparkPod

KRB5_PATH_KEY = "spark.kubernetes.kerberos.krb5.path"
KRB5_CONFIG_MAP_KEY = "spark.kubernetes.kerberos.krb5.configMapName"
TOKEN_SECRET_NAME_KEY = "spark.kubernetes.kerberos.tokenSecret.name"
TOKEN_SECRET_ITEM_KEY = "spark.kubernetes.kerberos.tokenSecret.itemKey"
KEYTAB_KEY = "spark.kerberos.keytab"
PRINCIPAL_KEY = "spark.kerberos.principal"
# Spark's older names of the two, read when the new ones are unset (as Spark's ConfigEntry alternatives).
_FALLBACKS = {KEYTAB_KEY: "spark.yarn.keytab", PRINCIPAL_KEY: "spark.yarn.principal"}

KRB5_VOLUME = "krb5-file"
KRB5_MOUNT_PATH = "/etc/krb5.conf"
KRB5_ITEM = "krb5.conf"
KEYTAB_VOLUME = "kerberos-keytab"
KEYTAB_MOUNT_POINT = "/mnt/secrets/kerberos-keytab"
TOKEN_VOLUME = "hadoop-secret"
TOKEN_MOUNT_POINT = "/mnt/secrets/hadoop-credentials"
ENV_HADOOP_TOKEN_FILE_LOCATION = "HADOOP_TOKEN_FILE_LOCATION"
_ITEM_NAME = re.compile(r"^[-._a-zA-Z0-9]+$")  # what a ConfigMap or Secret data key may be


def _value(properties: Mapping[str, str], key: str) -> str | None:
    return properties.get(key) or properties.get(_FALLBACKS.get(key, key)) or None


def _both_or_neither(properties: Mapping[str, str], first: str, second: str) -> None:
    for given, missing in ((first, second), (second, first)):
        if _value(properties, given) and not _value(properties, missing):
            raise ConfigError(
                f"{given}={_value(properties, given)} is set without {missing}: set both (or neither)",
                key=missing,
                value=None,
            )


def check_kerberos_keys(properties: Mapping[str, str]) -> None:
    """Spark's requirements on the keys together; a :class:`ConfigError` naming the key to fix."""
    if properties.get(KRB5_PATH_KEY) and properties.get(KRB5_CONFIG_MAP_KEY):
        raise ConfigError(
            f"{KRB5_PATH_KEY} and {KRB5_CONFIG_MAP_KEY} are both set: name the existing ConfigMap or the "
            "local krb5.conf to ship, not both",
            key=KRB5_PATH_KEY,
            value=properties[KRB5_PATH_KEY],
        )
    _both_or_neither(properties, KEYTAB_KEY, PRINCIPAL_KEY)
    _both_or_neither(properties, TOKEN_SECRET_NAME_KEY, TOKEN_SECRET_ITEM_KEY)


def local_file(key: str, value: str) -> Path:
    """The local file a key names (a path or a ``file:`` URI); a :class:`ConfigError` when it is not a
    readable file or its name cannot be a ConfigMap/Secret item."""
    path = Path(urlsplit(value).path if value.startswith("file:") else value)
    if not path.is_file():
        raise ConfigError(
            f"{key}={value}: no such file on the submitting machine; fix the path (a file in the image is "
            "named with local://)"
            if key == KEYTAB_KEY
            else f"{key}={value}: no such file; fix the path",
            key=key,
            value=value,
        )
    if not _ITEM_NAME.match(path.name):
        raise ConfigError(
            f"{key}={value}: the file name {path.name!r} cannot be a Kubernetes data key (letters, digits, "
            "'-', '_', '.'); rename the file",
            key=key,
            value=value,
        )
    return path


log = logging.getLogger(__name__)

_WARNED: set[str] = set()


def _warn_no_tokens(krb5: str) -> None:
    # Once per krb5 source: cluster mode builds the steps more than once for one submission.
    if krb5 in _WARNED:
        return
    _WARNED.add(krb5)
    log.warning(
        "Kerberos: krb5.conf is mounted on the driver, but neither a keytab (%s) nor a delegation-token "
        "Secret (%s) is given. Spark's own submit would obtain delegation tokens from the submitter's "
        "Kerberos ticket; k8s-backend submit does not, so the driver starts without Hadoop delegation "
        "tokens. Give one of the two keys if the application reads secured Hadoop services.",
        KEYTAB_KEY,
        TOKEN_SECRET_NAME_KEY,
    )


class DriverKerberosStep:
    """Mount krb5.conf, the keytab or the delegation-token Secret on the driver (see the module)."""

    def __init__(self, properties: Mapping[str, str]) -> None:
        check_kerberos_keys(properties)
        self._krb5_path = properties.get(KRB5_PATH_KEY) or None
        self._krb5_map = properties.get(KRB5_CONFIG_MAP_KEY) or None
        keytab = _value(properties, KEYTAB_KEY)
        # A local: keytab is in the image already; any other is (or, once rewritten, was) shipped.
        self._keytab = keytab if keytab and not keytab.startswith("local:") else None
        self._token_secret = properties.get(TOKEN_SECRET_NAME_KEY) or None
        self._token_item = properties.get(TOKEN_SECRET_ITEM_KEY, "")
        if (self._krb5_path or self._krb5_map) and not (keytab or self._token_secret):
            _warn_no_tokens(self._krb5_path or self._krb5_map or "")

    def configure_pod(self, pod: SparkPod, ctx: DriverContext) -> SparkPod:
        if not (self._krb5_path or self._krb5_map or self._keytab or self._token_secret):
            return pod
        pod = pod.copy()
        if self._krb5_map or self._krb5_path:
            add_volumes(pod.pod, [{"name": KRB5_VOLUME, "configMap": self._krb5_source(ctx)}])
            add_volume_mounts(pod.container, [volume_mount(KRB5_VOLUME, KRB5_MOUNT_PATH, sub_path=KRB5_ITEM)])
        if self._keytab:
            secret = owned_name(ctx, "kerberos-keytab")
            add_volumes(pod.pod, [{"name": KEYTAB_VOLUME, "secret": {"secretName": secret}}])
            add_volume_mounts(pod.container, [volume_mount(KEYTAB_VOLUME, KEYTAB_MOUNT_POINT)])
        elif self._token_secret:
            add_volumes(pod.pod, [{"name": TOKEN_VOLUME, "secret": {"secretName": self._token_secret}}])
            add_volume_mounts(pod.container, [volume_mount(TOKEN_VOLUME, TOKEN_MOUNT_POINT)])
            location = f"{TOKEN_MOUNT_POINT}/{self._token_item}"
            upsert_env(pod.container, [env_var(ENV_HADOOP_TOKEN_FILE_LOCATION, location)])
        return pod

    def _krb5_source(self, ctx: DriverContext) -> Obj:
        if self._krb5_map:
            return {"name": self._krb5_map}
        name = Path(str(self._krb5_path)).name
        return {"name": owned_name(ctx, "krb5-file"), "items": [{"key": name, "path": KRB5_ITEM}]}

    def additional_resources(self, ctx: DriverContext) -> Sequence[Obj]:
        return ()

    def system_properties(self, ctx: DriverContext) -> Mapping[str, str]:
        """The shipped keytab's path in the driver's pod (Spark's rewrite of ``spark.kerberos.keytab``)."""
        if not self._keytab or self._keytab.startswith(f"{KEYTAB_MOUNT_POINT}/"):
            return {}
        return {KEYTAB_KEY: f"{KEYTAB_MOUNT_POINT}/{local_file(KEYTAB_KEY, self._keytab).name}"}

    def owned_resources(self, ctx: DriverContext) -> Sequence[Obj]:
        """The krb5.conf ConfigMap and the keytab Secret to ship (read here: a missing file is a
        :class:`ConfigError` naming its key)."""
        resources: list[Obj] = []
        if self._krb5_path:
            path = local_file(KRB5_PATH_KEY, self._krb5_path)
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise ConfigError(
                    f"{KRB5_PATH_KEY}={self._krb5_path}: cannot read it as text ({error}); fix the path",
                    key=KRB5_PATH_KEY,
                    value=self._krb5_path,
                ) from None
            resources.append(_owned(ctx, "ConfigMap", owned_name(ctx, "krb5-file"), {path.name: text}))
        if self._keytab and not self._keytab.startswith(f"{KEYTAB_MOUNT_POINT}/"):
            path = local_file(KEYTAB_KEY, self._keytab)
            data = {path.name: base64.b64encode(path.read_bytes()).decode("ascii")}
            resources.append(_owned(ctx, "Secret", owned_name(ctx, "kerberos-keytab"), data))
        return resources


def _owned(ctx: DriverContext, kind: str, name: str, data: Mapping[str, str]) -> Obj:
    """An immutable ConfigMap or Secret of the application, as Spark builds them."""
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": ctx.namespace, "labels": {SPARK_APP_ID_LABEL: ctx.app_id}},
        "immutable": True,
        "data": dict(data),
    }
