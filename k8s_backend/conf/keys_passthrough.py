"""Keys table, the rest: Spark keys k8s_backend knowingly leaves to Spark, and project keys read elsewhere.

Listing them keeps the unknown-key warning quiet for legitimate Spark settings. Passed-through keys are
not checked; they stay in ``KubernetesConf.spark_properties`` like every other property.
"""

from __future__ import annotations

from k8s_backend.conf.spec import Key, Kind, Use

_DRIVER = "Driver pod (cluster mode): read by spark-submit when it builds the driver."
_SUBMIT = "Read by spark-submit."
_PLUGIN = "Read by a Spark executor plugin running in the driver JVM, not by k8s_backend."


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
        "Spark's driver records its exit exception on its pod.",
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
    _spark("spark.kubernetes.appKillPodDeletionGracePeriod", Kind.DURATION_S, None, _SUBMIT),
    _spark(
        "spark.kubernetes.submitInDriver", Kind.BOOL, "false", "Set by spark-submit for cluster-mode drivers."
    ),
    _spark("spark.kubernetes.setSubmitTimeInDriver", Kind.BOOL, None, _SUBMIT, has_spark_entry=False),
    _spark("spark.kubernetes.file.upload.path", Kind.STRING, None, _SUBMIT),
    _spark("spark.kubernetes.jars.avoidDownloadSchemes", Kind.LIST, "", _SUBMIT),
    _spark("spark.kubernetes.resource.type", Kind.STRING, None, _SUBMIT),
    _spark("spark.kubernetes.hadoop.configMapName", Kind.STRING, None, _SUBMIT),
    _spark("spark.kubernetes.kerberos.krb5.path", Kind.STRING, None, _SUBMIT),
    _spark("spark.kubernetes.kerberos.krb5.configMapName", Kind.STRING, None, _SUBMIT),
    _spark("spark.kubernetes.kerberos.tokenSecret.name", Kind.STRING, None, _SUBMIT),
    _spark("spark.kubernetes.kerberos.tokenSecret.itemKey", Kind.STRING, None, _SUBMIT),
    _spark("spark.kubernetes.kerberos.dt-secret-name", Kind.STRING, None, _SUBMIT, has_spark_entry=False),
    _spark("spark.kubernetes.kerberos.dt-secret-key", Kind.STRING, None, _SUBMIT, has_spark_entry=False),
    _spark(
        "spark.kubernetes.scheduler.volcano.podGroupTemplateJson",
        Kind.STRING,
        None,
        _SUBMIT,
        has_spark_entry=False,
    ),
)

UNSUPPORTED_KEYS: tuple[Key, ...] = (
    _spark("spark.kubernetes.executor.rollInterval", Kind.DURATION_S, "0s", _PLUGIN),
    _spark("spark.kubernetes.executor.rollPolicy", Kind.STRING, "OUTLIER", _PLUGIN),
    _spark("spark.kubernetes.executor.minTasksPerExecutorBeforeRolling", Kind.INT, "0", _PLUGIN),
    _spark("spark.kubernetes.executor.resizeInterval", Kind.DURATION_S, "1min", _PLUGIN),
    _spark("spark.kubernetes.executor.resizeThreshold", Kind.FLOAT, "0.9", _PLUGIN),
    _spark("spark.kubernetes.executor.resizeFactor", Kind.FLOAT, "0.1", _PLUGIN),
    _spark("spark.kubernetes.executor.pvc.resizeInterval", Kind.DURATION_MIN, "5min", _PLUGIN),
    _spark("spark.kubernetes.executor.pvc.resizeThreshold", Kind.FLOAT, "0.5", _PLUGIN),
    _spark("spark.kubernetes.executor.pvc.resizeFactor", Kind.FLOAT, "1.0", _PLUGIN),
    _spark(
        "spark.kubernetes.allocation.recoveryMode.enabled",
        Kind.BOOL,
        None,
        "Spark 4.2's single-task recovery-mode executors after OOM; not implemented by k8s_backend.",
    ),
    _spark(
        "spark.kubernetes.executor.podDeletionCost",
        Kind.INT,
        None,
        "Used by Spark's deployment allocator only, which k8s_backend does not support.",
    ),
)

# Keys of k8s_backend itself (or Spark keys) read by other modules through ``KubernetesConf.get``.
PROJECT_KEYS: tuple[Key, ...] = ()
