"""Typed, frozen configuration objects built from Spark properties.

Build them with :meth:`k8s_backend.KubernetesConf.from_spark_conf`; constructing them by hand is for
tests. Durations are float seconds, memory sizes are MiB, defaults are Spark 4.3's.

This module is pure data: it imports nothing from the parsers (:mod:`k8s_backend.conf.parse` and its
helpers import it). ``KubernetesConf.from_spark_conf`` is declared here for readers and type checkers,
and defined by the package above both, :mod:`k8s_backend.conf` (see its docstring for why).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from k8s_backend.conf.credentials import looks_like_credential
from k8s_backend.conf.frozen import FrozenDict, freeze
from k8s_backend.kube.settings import ApiClientConf as ApiClientConf  # how to reach the API server

# Spark's spark.redaction.regex default: the keys whose values are secrets in logs, UIs and reprs.
DEFAULT_REDACTION_REGEX = r"(?i)secret|password|token|access[.]key"
REDACTED = "*********(redacted)"  # what Spark shows instead of a secret


def redacted(props: Mapping[str, str]) -> dict[str, str]:
    """``props`` with the values of secret keys replaced: those ``spark.redaction.regex`` matches, as
    Spark does, and every key that looks like a credential's even if the pattern misses it
    (:func:`~k8s_backend.conf.credentials.looks_like_credential`)."""
    pattern = re.compile(props.get("spark.redaction.regex") or DEFAULT_REDACTION_REGEX)
    return {
        key: REDACTED if pattern.search(key) or looks_like_credential(key) else value
        for key, value in props.items()
    }


DEFAULT_PROFILE_ID = 0
DEFAULT_CONTAINER_NAME = "spark-kubernetes-executor"
SPARK_CONF_DIR_IN_POD = "/opt/spark/conf"


@attrs.frozen
class ResourceRequest:
    """A custom executor resource such as GPUs (``spark.executor.resource.<name>.*``)."""

    name: str
    amount: int
    vendor: str = ""
    discovery_script: str = ""


@attrs.frozen
class ResourceProfile:
    """What one executor of a resource profile needs; profile 0 comes from ``spark.executor.*``."""

    id: int = DEFAULT_PROFILE_ID
    cores: int = 1
    memory_mib: int = 1024
    memory_overhead_mib: int | None = None  # explicit spark.executor.memoryOverhead
    offheap_mib: int = 0
    pyspark_memory_mib: int = 0
    custom_resources: tuple[ResourceRequest, ...] = ()
    task_cpus: float = 1  # a decimal since Spark 4.2 (fractional task CPUs)


@attrs.frozen
class VolumeSpec:
    """One ``spark.kubernetes.executor.volumes.<type>.<name>.*`` volume."""

    name: str
    type: str  # hostPath | emptyDir | nfs | persistentVolumeClaim
    mount_path: str
    mount_sub_path: str = ""
    mount_read_only: bool = False
    path: str = ""  # hostPath and nfs
    server: str = ""  # nfs
    claim_name: str = ""  # persistentVolumeClaim; "OnDemand" or containing SPARK_EXECUTOR_ID
    storage_class: str = ""
    size_limit: str = ""  # Kubernetes quantity, e.g. "10Gi"
    medium: str = ""  # emptyDir
    mount_sub_path_expr: str = ""  # mount.subPathExpr (exclusive with mount.subPath)
    host_path_type: str = ""  # hostPath options.type ("" = no check)
    labels: FrozenDict = attrs.field(factory=FrozenDict, converter=freeze)  # persistentVolumeClaim label.*
    annotations: FrozenDict = attrs.field(factory=FrozenDict, converter=freeze)  # ... annotation.*


@attrs.frozen
class AllocationConf:
    """``spark.kubernetes.allocation.*``."""

    allocator: str = "direct"  # direct | statefulset | deployment
    pod_deletion_cost: int | None = None  # spark.kubernetes.executor.podDeletionCost (deployment only)
    batch_size: int = 20
    batch_delay: float = 1.0
    max_pending_pods: int = 2**31 - 1
    max_pending_pods_per_rp: int = 2**31 - 1
    executor_timeout: float = 600.0
    driver_readiness_timeout: float = 1.0
    maximum: int = 2**31 - 1  # spark.kubernetes.allocation.maximum: pods created over the app's life
    adaptive: bool = False  # spark.kubernetes.allocation.batch.adaptive
    concurrency: int = 0  # spark.kubernetes.allocation.batch.concurrency (0: automatic)

    @property
    def pod_creation_timeout(self) -> float:
        """A requested pod never seen in a snapshot is given up after this long (as Spark)."""
        return max(5 * self.batch_delay, self.executor_timeout)


@attrs.frozen
class SnapshotsConf:
    """How executor pods are observed: watch, polling and snapshot delivery."""

    enable_api_watcher: bool = True
    streaming_list: bool = True  # a watch with sendInitialEvents for lists, where the server offers it
    enable_api_polling: bool = True
    api_polling_interval: float = 30.0
    enable_polling_with_resource_version: bool = False
    event_processing_interval: float = 1.0
    missing_pod_detect_delta: float = 30.0
    check_all_containers: bool = True  # Spark 4.3's default
    subscribers_shutdown_grace_period: float = 20.0


@attrs.frozen
class LifecycleConf:
    """What happens to executors that end, are killed or are decommissioned."""

    delete_on_termination: bool = True
    decommission_label: str | None = None
    decommission_label_value: str = ""
    disruption_decommission: bool = True  # act on DisruptionTarget, cordons and disruption taints
    disruption_taints: tuple[str, ...] = (
        "node.kubernetes.io/unschedulable",
        "ToBeDeletedByClusterAutoscaler",
        "karpenter.sh/disrupted",
        "karpenter.sh/disruption",
    )
    disruption_node_interval: float = 5.0
    autoscaler_hints: bool = False  # annotate executors that hold work against autoscaler scale-down
    autoscaler_hints_interval: float = 5.0
    autoscaler_hints_cost: int = 1_000_000
    node_failure_threshold: int = 0  # executor failures on one node (not the app's) to avoid it; 0: off
    node_failure_window: float = 600.0
    quota_aware: bool = True  # cap allocation rounds at what the namespace's ResourceQuotas allow
    oom_overhead_factor: float = 1.0  # per OOM kill, the replacements' memory overhead x this (1: off)
    oom_max_overhead_factor: float = 2.0  # the bound of that raise
    delete_grace_period: float = 5.0  # spark.kubernetes.dynamicAllocation.deleteGracePeriod
    max_executor_failures: int | None = None  # None: max(3, 2 x max executors)
    failures_validity_interval: float | None = None
    deleted_executors_cache_timeout: float = 180.0
    stuck_timeout: float = 60.0  # pending longer than this: the reason is logged and shown in status()
    image_pull_fail_timeout: float = 120.0  # 0 disables failing the application on unpullable images
    recovery_policy: str = "adopt"  # after a restart: adopt matching live executor pods, or delete them
    stop_exit_wait: float = 2.0  # at stop, time for executors the driver stopped to exit by themselves
    stop_timeout: float = 15.0  # the longest stop() takes; cleanup then goes on in the background


def _upper(text: str) -> str:
    return text.upper()


@attrs.frozen
class RollConf:
    """Executor rolling (Spark's ExecutorRollPlugin keys); on when ``interval`` is positive, which the
    parser allows only with the plugin listed in ``spark.plugins`` and decommissioning enabled."""

    interval: float = 0.0  # spark.kubernetes.executor.rollInterval, seconds; 0: off
    policy: str = attrs.field(default="OUTLIER", converter=_upper)  # a RollPolicy name (Spark upper-cases)
    min_tasks: int = 0  # spark.kubernetes.executor.minTasksPerExecutorBeforeRolling
    hook: str | None = None  # spark.kubernetes.executor.rollPolicyHook, "module:function"

    @property
    def enabled(self) -> bool:
        return self.interval > 0


@attrs.frozen
class ScalingConf:
    """How many executors: static instances or dynamic allocation."""

    executor_instances: int = 2
    dynamic_allocation: bool = False
    min_executors: int = 0
    max_executors: int = 2**31 - 1
    initial_executors: int = 0
    executor_idle_timeout: float = 60.0
    min_registered_ratio: float = 0.8

    @property
    def initial_target(self) -> int:
        """The executor count asked for at start (Spark's getInitialTargetExecutorNumber)."""
        if self.dynamic_allocation:
            return max(self.min_executors, self.initial_executors)
        return self.executor_instances

    @property
    def max_target(self) -> int:
        return self.max_executors if self.dynamic_allocation else self.executor_instances


@attrs.frozen
class DriverConf:
    """What executors need to know about the driver."""

    pod_name: str | None = None
    host: str = ""
    port: int = 7078
    own_pvc: bool = True
    reuse_pvc: bool = True
    wait_to_reuse_pvc: bool = False
    delete_service_on_termination: bool = True
    service_account: str | None = None  # spark.kubernetes.authenticate.driver.serviceAccountName
    heartbeat_enabled: bool = True  # a client-mode driver keeps a heartbeat Lease (backend.heartbeat)
    heartbeat_lease_duration: float = 60.0


@attrs.frozen
class ExecutorPodConf:
    """Everything that shapes an executor pod."""

    image: str | None = None
    pull_policy: str = "IfNotPresent"
    pull_secrets: tuple[str, ...] = ()
    pod_name_prefix: str | None = None
    labels: FrozenDict = attrs.field(factory=FrozenDict, converter=freeze)
    annotations: FrozenDict = attrs.field(factory=FrozenDict, converter=freeze)
    node_selector: FrozenDict = attrs.field(factory=FrozenDict, converter=freeze)
    environment: FrozenDict = attrs.field(factory=FrozenDict, converter=freeze)  # spark.executorEnv.*
    secret_env: FrozenDict = attrs.field(factory=FrozenDict, converter=freeze)  # ENV -> "secret:key"
    secret_mounts: FrozenDict = attrs.field(factory=FrozenDict, converter=freeze)  # secret -> path
    volumes: tuple[VolumeSpec, ...] = ()
    local_dirs: tuple[str, ...] = ()  # spark.local.dir split on commas; empty: a generated one
    local_dirs_tmpfs: bool = False
    pod_template_file: str | None = None
    pod_template_container_name: str | None = None
    service_account: str | None = None
    scheduler_name: str | None = None
    request_cores: str | None = None  # Kubernetes CPU quantity, default profile only
    limit_cores: str | None = None
    memory_overhead_factor: float = 0.1
    min_memory_overhead_mib: int = 384
    block_manager_port: int = 7079
    extra_java_options: str = ""
    extra_class_path: str = ""
    decommission_enabled: bool = False
    decommission_script: str = "/opt/decom.sh"
    feature_steps: tuple[str, ...] = ()
    disable_config_map: bool = False
    config_map_max_size: int = 1048576
    use_driver_pod_ip: bool = True
    legacy_read_write_once: bool = False
    default_profile: ResourceProfile = ResourceProfile()
    excluded_feature_steps: tuple[str, ...] = ()
    termination_grace_period: float = 30.0  # seconds; the pod's terminationGracePeriodSeconds
    allow_privilege_escalation: bool = False
    hadoop_config_map: str | None = None  # spark.kubernetes.executor.hadoopConfigMapName

    @property
    def container_name(self) -> str:
        return self.pod_template_container_name or DEFAULT_CONTAINER_NAME


@attrs.frozen
class GangConf:
    """Gang scheduling: YuniKorn task groups, Volcano PodGroups, or the built-in all-or-nothing start."""

    enabled: bool = False  # built-in all-or-nothing start
    min_executors: int | None = None  # None: the initial executor count
    timeout: float = 300.0
    style: str = "Soft"  # Soft: go on with what runs; Hard: fail the application
    yunikorn: bool | None = None  # None: when the scheduler name is "yunikorn"
    yunikorn_queue: str | None = None
    yunikorn_task_group: str = "spark-executor"
    volcano_queue: str | None = None
    volcano_priority_class: str | None = None
    volcano_template_file: str | None = None


@attrs.frozen
class KubernetesConf:
    """The whole configuration of a k8s_backend application, grouped by concern."""

    namespace: str = "default"
    app_name: str = "spark"
    app_id: str | None = None  # spark.app.id, if set
    api: ApiClientConf = ApiClientConf()  # noqa: RUF009 (frozen, so one shared default is safe)
    allocation: AllocationConf = AllocationConf()
    snapshots: SnapshotsConf = SnapshotsConf()
    lifecycle: LifecycleConf = LifecycleConf()
    roll: RollConf = RollConf()
    scaling: ScalingConf = ScalingConf()
    driver: DriverConf = DriverConf()
    executor: ExecutorPodConf = ExecutorPodConf()
    gang: GangConf = GangConf()
    metrics_port: int = 0  # spark.kubernetes.metrics.port: Prometheus metrics on this port; 0: off
    metrics_host: str = "127.0.0.1"  # spark.kubernetes.metrics.host
    report_timeline: str | None = None  # spark.kubernetes.report.timeline: HTML written at stop()
    progress_interval: float = 1.0  # spark.kubernetes.progress.interval: the progress line; 0: off
    spark_properties: FrozenDict = attrs.field(
        factory=FrozenDict, converter=freeze, repr=lambda props: repr(redacted(props))
    )

    if TYPE_CHECKING:
        # Defined by k8s_backend.conf, which imports this module and the parser; importing this module
        # always runs that package first, so the method is there for every user of the class.

        @classmethod
        def from_spark_conf(cls, conf: object) -> KubernetesConf:
            """Read and check Spark properties (a mapping or a ``pyspark.SparkConf``).

            Raises :class:`k8s_backend.ConfigError` naming the key, the bad value and what is accepted.
            """

    def get(self, key: str, default: str | None = None) -> str | None:
        """A raw Spark property."""
        value = self.spark_properties.get(key, default)
        return None if value is None else str(value)

    @property
    def max_executor_failures(self) -> int:
        """Spark's maxNumExecutorFailures: explicit, else max(3, 2 x max executors)."""
        explicit = self.lifecycle.max_executor_failures
        if explicit is not None:
            return explicit
        return max(3, 2 * min(self.scaling.max_target, 2**30))

    def with_properties(self, extra: Mapping[str, str]) -> KubernetesConf:
        """A copy re-parsed with extra Spark properties on top."""
        merged = dict(self.spark_properties)
        merged.update(extra)
        return self.from_spark_conf(merged)
