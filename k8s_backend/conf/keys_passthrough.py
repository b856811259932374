"""Keys table, the rest: Spark keys read outside ``KubernetesConf``'s fields, and keys refused.

Each row's doc names the component that acts on the key under ``pyk8s://`` (``k8s-backend submit``'s
driver pod builder, its submission client...), or says it is refused: those keys raise a
:class:`~k8s_backend.errors.ConfigError` (:mod:`k8s_backend.conf.refused`) instead of being accepted and
then ignored. The keys stay in ``KubernetesConf.spark_properties`` like every other property.
"""

from __future__ import annotations

from k8s_backend.conf.refused import refusal_for
from k8s_backend.conf.spec import Key, Kind, Use

_DRIVER = (
    "Cluster mode: read by `k8s-backend submit`'s driver pod builder (`pods/driver/`). "
    "Client mode: the driver is the submitting process; no driver pod is built."
)
_SUBMIT = "Read by `k8s-backend submit` (cluster mode: its submission client and the wait for the driver)."
_SET = "Set by `k8s-backend submit` in the properties of a cluster-mode driver."


def _refused(name: str) -> str:
    rule = refusal_for(name)
    assert rule is not None, name  # every row documented as refused has its rule
    return f"Refused under pyk8s:// (ConfigError): {rule.reason}."


def _spark(
    name: str,
    kind: Kind,
    default: str | None,
    doc: str,
    *,
    fallbacks: tuple[str, ...] = (),
    has_spark_entry: bool = True,
) -> Key:
    return Key(
        name, kind, default, doc, fallbacks=fallbacks, use=Use.PASSTHROUGH, has_spark_entry=has_spark_entry
    )


def _family(name: str, doc: str) -> Key:
    return Key(name, Kind.PREFIX, None, doc, use=Use.PASSTHROUGH, has_spark_entry=False)


DRIVER_POD_KEYS: tuple[Key, ...] = (
    _spark(
        "spark.kubernetes.driver.container.image",
        Kind.STRING,
        None,
        _DRIVER,
        fallbacks=("spark.kubernetes.container.image",),
    ),
    _spark("spark.kubernetes.driver.request.cores", Kind.STRING, None, _DRIVER),
    _spark("spark.kubernetes.driver.limit.cores", Kind.STRING, None, _DRIVER),
    _spark("spark.kubernetes.driver.podTemplateFile", Kind.STRING, None, _DRIVER),
    _spark("spark.kubernetes.driver.podTemplateContainerName", Kind.STRING, None, _DRIVER),
    _spark("spark.kubernetes.driver.scheduler.name", Kind.STRING, None, _DRIVER),
    _spark("spark.kubernetes.driver.pod.featureSteps", Kind.LIST, "", _DRIVER),
    _spark("spark.kubernetes.driver.pod.excludedFeatureSteps", Kind.LIST, "", _DRIVER),
    _spark("spark.kubernetes.driver.resourceNamePrefix", Kind.STRING, None, _DRIVER),
    _spark(
        "spark.kubernetes.driver.securityContext.allowPrivilegeEscalation",
        Kind.BOOL,
        None,
        _DRIVER,
        fallbacks=("spark.kubernetes.securityContext.allowPrivilegeEscalation",),
    ),
    _spark("spark.kubernetes.driver.service.ipFamilies", Kind.STRING, "IPv4", _DRIVER),
    _spark("spark.kubernetes.driver.service.ipFamilyPolicy", Kind.STRING, "SingleStack", _DRIVER),
    _spark("spark.kubernetes.driver.service.publishNotReadyAddresses", Kind.BOOL, "false", _DRIVER),
    _spark(
        "spark.kubernetes.driver.annotateExitException",
        Kind.BOOL,
        "false",
        "Read by `k8s-backend submit`'s driver (either mode; `cli/submit/exit_exception.py`): when true and "
        "spark.kubernetes.driver.pod.name is known (always in cluster mode), the traceback of the exception "
        "the application did not catch goes onto the driver pod as the annotation `spark.exit-exception` "
        "(abbreviated to 64 KiB).",
    ),
    _family("spark.kubernetes.driver.label.<name>", _DRIVER),
    _family("spark.kubernetes.driver.annotation.<name>", _DRIVER),
    _family("spark.kubernetes.driver.node.selector.<label>", _DRIVER),
    _family("spark.kubernetes.driver.secrets.<secret>", _DRIVER),
    _family("spark.kubernetes.driver.secretKeyRef.<ENV>", _DRIVER),
    _family("spark.kubernetes.driver.volumes.<type>.<name>.<option>", _DRIVER),
    _family("spark.kubernetes.driver.service.annotation.<name>", _DRIVER),
    _family("spark.kubernetes.driver.service.label.<name>", _DRIVER),
    _family("spark.kubernetes.driverEnv.<NAME>", _DRIVER),
)

SUBMISSION_KEYS: tuple[Key, ...] = (
    _spark("spark.kubernetes.submission.requestTimeout", Kind.DURATION_MS, "10000", _SUBMIT),
    _spark("spark.kubernetes.submission.connectionTimeout", Kind.DURATION_MS, "10000", _SUBMIT),
    _spark("spark.kubernetes.submission.waitAppCompletion", Kind.BOOL, "true", _SUBMIT),
    _spark("spark.kubernetes.report.interval", Kind.DURATION_MS, "1s", _SUBMIT),
    _spark(
        "spark.kubernetes.appKillPodDeletionGracePeriod",
        Kind.DURATION_S,
        None,
        "Read by `k8s-backend kill` (the grace period of the driver pod's deletion).",
    ),
    _spark("spark.kubernetes.submitInDriver", Kind.BOOL, "false", _SET),
    _spark(
        "spark.kubernetes.setSubmitTimeInDriver",
        Kind.BOOL,
        None,
        _refused("spark.kubernetes.setSubmitTimeInDriver"),
        has_spark_entry=False,
    ),
    _spark(
        "spark.kubernetes.file.upload.path",
        Kind.STRING,
        None,
        "Read by `k8s-backend submit` (cluster mode): local files are uploaded there "
        "(`cli/submit/uploads.py`).",
    ),
    _spark(
        "spark.kubernetes.jars.avoidDownloadSchemes",
        Kind.LIST,
        "",
        _refused("spark.kubernetes.jars.avoidDownloadSchemes"),
    ),
    _spark("spark.kubernetes.resource.type", Kind.STRING, None, _refused("spark.kubernetes.resource.type")),
    _spark(
        "spark.kubernetes.hadoop.configMapName",
        Kind.STRING,
        None,
        "Cluster mode: mounted by `k8s-backend submit`'s driver pod builder (`pods/driver/hadoop.py`) on "
        "the driver and its executors (else `$HADOOP_CONF_DIR`'s files are shipped in a ConfigMap). "
        "Client mode: mounted on the executors.",
    ),
    _spark(
        "spark.kubernetes.kerberos.krb5.path",
        Kind.STRING,
        None,
        "Cluster mode: `k8s-backend submit` ships the local krb5.conf in a ConfigMap `<prefix>-krb5-file` "
        "owned by the driver pod and mounts it at /etc/krb5.conf (`pods/driver/kerberos.py`, Spark's "
        "KerberosConfDriverFeatureStep). Client mode: not read.",
    ),
    _spark(
        "spark.kubernetes.kerberos.krb5.configMapName",
        Kind.STRING,
        None,
        "Cluster mode: the existing ConfigMap (item `krb5.conf`) is mounted at /etc/krb5.conf on the driver "
        "(`pods/driver/kerberos.py`). Client mode: not read.",
    ),
    _spark(
        "spark.kubernetes.kerberos.tokenSecret.name",
        Kind.STRING,
        None,
        "Cluster mode: the existing Secret of delegation tokens is mounted at "
        "/mnt/secrets/hadoop-credentials on the driver, `HADOOP_TOKEN_FILE_LOCATION` naming its item "
        "(`pods/driver/kerberos.py`; not with a shipped keytab, as Spark). Client mode: not read.",
    ),
    _spark(
        "spark.kubernetes.kerberos.tokenSecret.itemKey",
        Kind.STRING,
        None,
        "Cluster mode: the item of `spark.kubernetes.kerberos.tokenSecret.name` that "
        "`HADOOP_TOKEN_FILE_LOCATION` names (`pods/driver/kerberos.py`). Client mode: not read.",
    ),
    _spark(
        "spark.kerberos.keytab",
        Kind.STRING,
        None,
        "Cluster mode, with spark.kerberos.principal: a keytab on the submitting machine (not `local://`) "
        "is shipped in a Secret `<prefix>-kerberos-keytab` owned by the driver pod, mounted at "
        "/mnt/secrets/kerberos-keytab, and this key is rewritten to its path there "
        "(`pods/driver/kerberos.py`). "
        "The login and delegation tokens are Spark's (Hadoop and a KDC).",
        fallbacks=("spark.yarn.keytab",),
    ),
    _spark(
        "spark.kerberos.principal",
        Kind.STRING,
        None,
        "Cluster mode: required with spark.kerberos.keytab (`pods/driver/kerberos.py`); the login is "
        "Spark's.",
        fallbacks=("spark.yarn.principal",),
    ),
    _spark(
        "spark.yarn.keytab",
        Kind.STRING,
        None,
        "Cluster mode: Spark's older name of spark.kerberos.keytab (an alternative of its ConfigEntry), "
        "read when "
        "that is unset (`pods/driver/kerberos.py`).",
        has_spark_entry=False,
    ),
    _spark(
        "spark.yarn.principal",
        Kind.STRING,
        None,
        "Cluster mode: Spark's older name of spark.kerberos.principal (an alternative of its ConfigEntry), "
        "read "
        "when that is unset (`pods/driver/kerberos.py`).",
        has_spark_entry=False,
    ),
    _spark(
        "spark.kubernetes.kerberos.dt-secret-name",
        Kind.STRING,
        None,
        _refused("spark.kubernetes.kerberos.dt-secret-name"),
        has_spark_entry=False,
    ),
    _spark(
        "spark.kubernetes.kerberos.dt-secret-key",
        Kind.STRING,
        None,
        _refused("spark.kubernetes.kerberos.dt-secret-key"),
        has_spark_entry=False,
    ),
    _spark(
        "spark.kubernetes.scheduler.volcano.podGroupTemplateJson",
        Kind.STRING,
        None,
        _refused("spark.kubernetes.scheduler.volcano.podGroupTemplateJson"),
        has_spark_entry=False,
    ),
)

UNSUPPORTED_KEYS: tuple[Key, ...] = (
    _spark(
        "spark.kubernetes.executor.resizeInterval",
        Kind.DURATION_S,
        "1min",
        _refused("spark.kubernetes.executor.resizeInterval"),
    ),
    _spark(
        "spark.kubernetes.executor.resizeThreshold",
        Kind.FLOAT,
        "0.9",
        _refused("spark.kubernetes.executor.resizeThreshold"),
    ),
    _spark(
        "spark.kubernetes.executor.resizeFactor",
        Kind.FLOAT,
        "0.1",
        _refused("spark.kubernetes.executor.resizeFactor"),
    ),
    _spark(
        "spark.kubernetes.executor.pvc.resizeInterval",
        Kind.DURATION_MIN,
        "5min",
        _refused("spark.kubernetes.executor.pvc.resizeInterval"),
    ),
    _spark(
        "spark.kubernetes.executor.pvc.resizeThreshold",
        Kind.FLOAT,
        "0.5",
        _refused("spark.kubernetes.executor.pvc.resizeThreshold"),
    ),
    _spark(
        "spark.kubernetes.executor.pvc.resizeFactor",
        Kind.FLOAT,
        "1.0",
        _refused("spark.kubernetes.executor.pvc.resizeFactor"),
    ),
    _spark(
        "spark.kubernetes.allocation.recoveryMode.enabled",
        Kind.BOOL,
        None,
        _refused("spark.kubernetes.allocation.recoveryMode.enabled"),
    ),
)

# Keys of k8s_backend itself (or Spark keys) read by other modules through ``KubernetesConf.get``.
PROJECT_KEYS: tuple[Key, ...] = ()
