"""Keys table, executor pod part: image, names, labels, volumes, secrets and other pod settings."""

from __future__ import annotations

from k8s_backend.conf import syntax
from k8s_backend.conf.spec import (
    DNS_LABEL,
    DNS_SUBDOMAIN,
    Check,
    Key,
    Kind,
    all_of,
    at_least,
    between,
    each,
    not_empty,
    one_of,
    syntax_rule,
)

# Pod names are <prefix>-exec-<id>: 253 minus "-exec-" (6) minus 10 digits leaves 237.
POD_NAME_PREFIX_MAX = 237


def _pod_name_prefix_problem(text: str) -> str | None:
    problem = syntax.dns_subdomain_problem(text, POD_NAME_PREFIX_MAX)
    if problem is None and "." in text:
        # Spark allows dots, but executor hostnames come from the pod name with dots turned into '_',
        # which the API server refuses: every executor create would fail.
        return "must not contain '.': executor hostnames are derived from it and must be DNS-1123 labels"
    return problem


_POD_NAME_PREFIX = syntax_rule(
    _pod_name_prefix_problem,
    f"must be a DNS-1123 label-like name (letters, digits, '-') of at most {POD_NAME_PREFIX_MAX} characters",
)
# Both image keys: the API server refuses an image with surrounding blanks, the kubelet one with any.
_IMAGE = syntax_rule(syntax.image_problem, "must be an image reference without whitespace")
# The pod's terminationGracePeriodSeconds is an int64: 2^63 s (what 9223372036854775807s becomes as
# float seconds) makes the API server refuse the pod's JSON.
_GRACE_PERIOD = all_of(
    at_least(0, "must be 0 or more"),
    Check.that(lambda v: int(v) < 2**63, "must be below 2^63 seconds (an int64 field of the pod)"),
)
_BLOCK_MANAGER_PORT = Check.that(lambda v: v == 0 or 1024 <= v <= 65535, "must be 0 or in 1024-65535")

IMAGE_KEYS: tuple[Key, ...] = (
    Key(
        "spark.kubernetes.container.image",
        Kind.STRING,
        None,
        "Image of all Spark containers; `{{SPARK_VERSION}}` is replaced by the installed pyspark version.",
        check=_IMAGE,
    ),
    Key(
        "spark.kubernetes.executor.container.image",
        Kind.STRING,
        None,
        "Executor image (required when pods are built; `{{SPARK_VERSION}}` is replaced).",
        field="executor.image",
        fallbacks=("spark.kubernetes.container.image",),
        check=_IMAGE,
        custom=True,
    ),
    Key(
        "spark.kubernetes.container.image.pullPolicy",
        Kind.STRING,
        "IfNotPresent",
        "Image pull policy.",
        field="executor.pull_policy",
        check=one_of("Always", "Never", "IfNotPresent"),
    ),
    Key(
        "spark.kubernetes.container.image.pullSecrets",
        Kind.LIST,
        "",
        "Secrets used to pull images (`imagePullSecrets`).",
        field="executor.pull_secrets",
        check=each(DNS_SUBDOMAIN),
    ),
)

POD_KEYS: tuple[Key, ...] = (
    Key(
        "spark.kubernetes.executor.podNamePrefix",
        Kind.STRING,
        None,
        "Executor pods are named `<prefix>-exec-<id>`; unset: derived from spark.app.name by the backend.",
        field="executor.pod_name_prefix",
        check=_POD_NAME_PREFIX,
    ),
    Key(
        "spark.kubernetes.executor.podTemplateFile",
        Kind.STRING,
        None,
        "Pod template (YAML) that executor pods start from.",
        field="executor.pod_template_file",
        check=not_empty("must be a file path, not empty"),
    ),
    Key(
        "spark.kubernetes.executor.podTemplateContainerName",
        Kind.STRING,
        None,
        "Template container that becomes the Spark container (default `spark-kubernetes-executor`).",
        field="executor.pod_template_container_name",
        check=DNS_LABEL,
    ),
    Key(
        "spark.kubernetes.authenticate.executor.serviceAccountName",
        Kind.STRING,
        None,
        "Executor service account (a pod template's account wins).",
        field="executor.service_account",
        fallbacks=("spark.kubernetes.authenticate.driver.serviceAccountName",),
        check=DNS_SUBDOMAIN,
    ),
    Key(
        "spark.kubernetes.scheduler.name",
        Kind.STRING,
        None,
        "Scheduler of driver and executor pods (`spec.schedulerName`).",
        check=not_empty(),
    ),
    Key(
        "spark.kubernetes.executor.scheduler.name",
        Kind.STRING,
        None,
        "Scheduler of executor pods.",
        field="executor.scheduler_name",
        fallbacks=("spark.kubernetes.scheduler.name",),
        check=not_empty(),
    ),
    Key(
        "spark.kubernetes.executor.label.<name>",
        Kind.PREFIX,
        None,
        "Extra executor pod labels; `{{APP_ID}}` and `{{EXECUTOR_ID}}` in values are replaced. Spark's own "
        "label keys are refused.",
        field="executor.labels",
        custom=True,
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.annotation.<name>",
        Kind.PREFIX,
        None,
        "Extra executor pod annotations (values substituted as labels).",
        field="executor.annotations",
        custom=True,
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.node.selector.<label>",
        Kind.PREFIX,
        None,
        "Node selector of driver and executor pods.",
        field="executor.node_selector",
        custom=True,
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.node.selector.<label>",
        Kind.PREFIX,
        None,
        "Node selector of executor pods; wins over spark.kubernetes.node.selector.<label>.",
        field="executor.node_selector",
        custom=True,
        has_spark_entry=False,
    ),
    Key(
        "spark.executorEnv.<NAME>",
        Kind.PREFIX,
        None,
        "Executor environment variables; names not matching `[-._a-zA-Z][-._a-zA-Z0-9]*` are dropped "
        "with a warning.",
        field="executor.environment",
        custom=True,
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.secrets.<secret>",
        Kind.PREFIX,
        None,
        "Mount Secret `<secret>` at the given path (volume `<secret>-volume`).",
        field="executor.secret_mounts",
        custom=True,
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.secretKeyRef.<ENV>",
        Kind.PREFIX,
        None,
        "Environment variable `<ENV>` from a Secret key, written `secret:key`.",
        field="executor.secret_env",
        custom=True,
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.volumes.<type>.<name>.<option>",
        Kind.PREFIX,
        None,
        "Volumes: type hostPath, emptyDir, nfs or persistentVolumeClaim; options mount.path (required), "
        "mount.subPath, mount.subPathExpr, mount.readOnly, options.path, options.type, options.server, "
        "options.claimName (`OnDemand`, `SPARK_EXECUTOR_ID`), options.storageClass, options.sizeLimit, "
        "options.medium, label.<k>, annotation.<k>.",
        field="executor.volumes",
        custom=True,
        has_spark_entry=False,
    ),
    Key(
        "spark.local.dir",
        Kind.LIST,
        None,
        "Executor scratch directories (one emptyDir each); unset: one generated directory.",
        field="executor.local_dirs",
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.local.dirs.tmpfs",
        Kind.BOOL,
        "false",
        "Back the scratch directories with memory (emptyDir medium Memory).",
        field="executor.local_dirs_tmpfs",
    ),
    Key(
        "spark.blockManager.port",
        Kind.INT,
        "7079",
        "Executor block manager port; 0: none declared on the container.",
        field="executor.block_manager_port",
        check=_BLOCK_MANAGER_PORT,
        spark_default="0",
        spark_default_reason="Spark's executor pod builder uses 7079 when unset "
        "(Constants.DEFAULT_BLOCKMANAGER_PORT)",
    ),
)

MISC_KEYS: tuple[Key, ...] = (
    Key(
        "spark.executor.extraJavaOptions",
        Kind.STRING,
        None,
        "Extra executor JVM options (`SPARK_JAVA_OPT_<n>` environment variables), after "
        "`spark.executor.defaultJavaOptions`.",
        field="executor.extra_java_options",
        custom=True,
    ),
    Key(
        "spark.executor.defaultJavaOptions",
        Kind.STRING,
        None,
        "JVM options meant for administrators: prepended to `spark.executor.extraJavaOptions`, as Spark "
        "does (its ConfigEntry's prependedKey).",
        field="executor.extra_java_options",
        custom=True,
        has_spark_entry=False,
    ),
    Key(
        "spark.executor.extraClassPath",
        Kind.STRING,
        None,
        "Extra executor class path (`SPARK_CLASSPATH`).",
        field="executor.extra_class_path",
    ),
    Key(
        "spark.decommission.enabled",
        Kind.BOOL,
        "false",
        "Graceful decommissioning: executor pods get a preStop hook running the decommission script.",
        field="executor.decommission_enabled",
    ),
    Key(
        "spark.kubernetes.decommission.script",
        Kind.STRING,
        "/opt/decom.sh",
        "Script run by the preStop hook when decommissioning is enabled.",
        field="executor.decommission_script",
        check=not_empty(),
    ),
    Key(
        "spark.kubernetes.executor.pod.featureSteps",
        Kind.LIST,
        "",
        "Extra feature steps applied to executor pods after the built-in ones.",
        field="executor.feature_steps",
    ),
    Key(
        "spark.kubernetes.executor.pod.excludedFeatureSteps",
        Kind.LIST,
        "",
        "Feature steps not applied to executor pods.",
        field="executor.excluded_feature_steps",
    ),
    Key(
        "spark.kubernetes.executor.disableConfigMap",
        Kind.BOOL,
        "false",
        "Do not create the executor config map (files of SPARK_CONF_DIR) nor mount it.",
        field="executor.disable_config_map",
    ),
    Key(
        "spark.kubernetes.configMap.maxSize",
        Kind.LONG,
        "1048576",
        "Size budget in bytes of the files put in a config map.",
        field="executor.config_map_max_size",
        check=between(0, 1048576, "must be between 0 and 1048576 bytes"),
    ),
    Key(
        "spark.kubernetes.executor.useDriverPodIP",
        Kind.BOOL,
        "true",
        "Executors reach the driver at its pod IP rather than through the driver service name.",
        field="executor.use_driver_pod_ip",
    ),
    Key(
        "spark.kubernetes.legacy.useReadWriteOnceAccessMode",
        Kind.BOOL,
        "false",
        "On-demand PVCs use access mode ReadWriteOnce instead of ReadWriteOncePod (internal Spark key).",
        field="executor.legacy_read_write_once",
    ),
    Key(
        "spark.kubernetes.executor.terminationGracePeriodSeconds",
        Kind.DURATION_S,
        "30s",
        "Executor pods' `terminationGracePeriodSeconds`.",
        field="executor.termination_grace_period",
        check=_GRACE_PERIOD,
    ),
    Key(
        "spark.kubernetes.securityContext.allowPrivilegeEscalation",
        Kind.BOOL,
        "false",
        "`allowPrivilegeEscalation` of driver and executor containers.",
    ),
    Key(
        "spark.kubernetes.executor.securityContext.allowPrivilegeEscalation",
        Kind.BOOL,
        None,
        "`allowPrivilegeEscalation` of the executor container.",
        field="executor.allow_privilege_escalation",
        fallbacks=("spark.kubernetes.securityContext.allowPrivilegeEscalation",),
    ),
    Key(
        "spark.kubernetes.executor.hadoopConfigMapName",
        Kind.STRING,
        None,
        "Config map mounted at /opt/hadoop/conf with HADOOP_CONF_DIR set (internal, set by submission).",
        field="executor.hadoop_config_map",
        check=DNS_SUBDOMAIN,
        has_spark_entry=False,
    ),
)
