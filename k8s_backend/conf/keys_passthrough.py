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
    "Cluster mode: read by `k8s-backend submit`'s driver pod builder (`cli/submit/driver_pod.py`, "
    "`pods/driver/`). Client mode: the driver is the submitting process; no driver pod is built."
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
        _refused("spark.kubernetes.driver.annotateExitException"),
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
        _refused("spark.kubernetes.kerberos.krb5.path"),
    ),
    _spark(
        "spark.kubernetes.kerberos.krb5.configMapName",
        Kind.STRING,
        None,
        _refused("spark.kubernetes.kerberos.krb5.configMapName"),
    ),
    _spark(
        "spark.kubernetes.kerberos.tokenSecret.name",
        Kind.STRING,
        None,
        _refused("spark.kubernetes.kerberos.tokenSecret.name"),
    ),
    _spark(
        "spark.kubernetes.kerberos.tokenSecret.itemKey",
        Kind.STRING,
        None,
        _refused("spark.kubernetes.kerberos.tokenSecret.itemKey"),
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
        "spark.kubernetes.executor.rollInterval",
        Kind.DURATION_S,
        "0s",
        _refused("spark.kubernetes.executor.rollInterval"),
    ),
    _spark(
        "spark.kubernetes.executor.rollPolicy",
        Kind.STRING,
        "OUTLIER",
        _refused("spark.kubernetes.executor.rollPolicy"),
    ),
    _spark(
        "spark.kubernetes.executor.minTasksPerExecutorBeforeRolling",
        Kind.INT,
        "0",
        _refused("spark.kubernetes.executor.minTasksPerExecutorBeforeRolling"),
    ),
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
