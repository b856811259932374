"""Keys table, backend part: allocation, pod snapshots, executor lifecycle and executor counts."""

from __future__ import annotations

from k8s_backend.conf.spec import (
    LABEL_KEY,
    LABEL_VALUE,
    Key,
    Kind,
    at_least,
    between,
    each,
    greater_than,
    not_empty,
    one_of,
)

INT_MAX = "2147483647"
_POSITIVE_INT = greater_than(0, "must be a positive integer (> 0)")
_POSITIVE_TIME = greater_than(0, "must be a positive time value")
_POSITIVE_SECONDS = greater_than(
    0, "must be a positive time value, counted in whole seconds (so at least 1s)"
)

ALLOCATION_KEYS: tuple[Key, ...] = (
    Key(
        "spark.kubernetes.allocation.pods.allocator",
        Kind.STRING,
        "direct",
        "Pods allocator: `direct` (Spark's ExecutorPodsAllocator: the backend creates each executor pod), "
        "`statefulset` (a StatefulSet `spark-s-<appId>-<rpId>` per resource profile) or `deployment` (a "
        "Deployment `spark-d-<appId>-<rpId>`), whose controllers create the pods. The last two need a "
        "control plane with kube-controller-manager (not `pyk8s://local`).",
        field="allocation.allocator",
        check=one_of(
            "direct",
            "statefulset",
            "deployment",
            accepted="must be direct, statefulset or deployment (custom AbstractPodsAllocator classes are "
            "not supported by k8s_backend)",
        ),
    ),
    Key(
        "spark.kubernetes.executor.podDeletionCost",
        Kind.INT,
        None,
        "`controller.kubernetes.io/pod-deletion-cost` given to the pods of the executors Spark removes, "
        "so that the ReplicaSet controller removes those first (deployment allocator only; required "
        "with dynamic allocation). The other pods keep the template's `0`.",
        field="allocation.pod_deletion_cost",
        custom=True,  # checked against the allocator and dynamic allocation
    ),
    Key(
        "spark.kubernetes.allocation.batch.size",
        Kind.INT,
        "20",
        "Most pods requested per resource profile in one allocation round.",
        field="allocation.batch_size",
        check=_POSITIVE_INT,
    ),
    Key(
        "spark.kubernetes.allocation.batch.delay",
        Kind.DURATION_MS,
        "1s",
        "Time between allocation rounds; also how long a newly created PVC is not reused.",
        field="allocation.batch_delay",
        check=greater_than(0.1, "must be greater than 0.1s"),
    ),
    Key(
        "spark.kubernetes.allocation.batch.adaptive",
        Kind.BOOL,
        "false",
        "Adaptive batches: `batch.size` is the first round's size; the batch grows while creates succeed "
        "quickly and shrinks (halves) on 429, 5xx, timeouts or rising latency, honouring Retry-After. A "
        "round whose creates all succeeded quickly starts the next without waiting out `batch.delay`.",
        field="allocation.adaptive",
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.allocation.batch.concurrency",
        Kind.INT,
        "0",
        "Most pod creates in flight at once within a round. 0: automatic (1, as Spark, with fixed batches; "
        "up to 8 with adaptive batches, fewer while the API pushes back).",
        field="allocation.concurrency",
        check=at_least(0, "must be 0 (automatic) or a positive number of creates in flight"),
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.allocation.maxPendingPods",
        Kind.INT,
        INT_MAX,
        "Most executor pods not yet running (pending or requested), over all resource profiles.",
        field="allocation.max_pending_pods",
        check=_POSITIVE_INT,
    ),
    Key(
        "spark.kubernetes.allocation.maxPendingPodsPerRp",
        Kind.INT,
        INT_MAX,
        "Most executor pods not yet running per resource profile; at most maxPendingPods when set.",
        field="allocation.max_pending_pods_per_rp",
        check=_POSITIVE_INT,
    ),
    Key(
        "spark.kubernetes.allocation.maximum",
        Kind.INT,
        INT_MAX,
        "Most executor pods created over the whole life of the application.",
        field="allocation.maximum",
        check=_POSITIVE_INT,
    ),
    Key(
        "spark.kubernetes.allocation.executor.timeout",
        Kind.DURATION_MS,
        "600s",
        "A requested pod not seen by then (at least 5 x batch.delay) is deleted and asked for again.",
        field="allocation.executor_timeout",
        check=_POSITIVE_TIME,
    ),
    Key(
        "spark.kubernetes.allocation.driver.readinessTimeout",
        Kind.DURATION_S,
        "1s",
        "How long to wait at start for the driver pod to be Ready before creating executors.",
        field="allocation.driver_readiness_timeout",
        check=_POSITIVE_SECONDS,
    ),
)

SNAPSHOT_KEYS: tuple[Key, ...] = (
    Key(
        "spark.kubernetes.executor.enableApiWatcher",
        Kind.BOOL,
        "true",
        "Watch executor pods (internal Spark key).",
        field="snapshots.enable_api_watcher",
    ),
    Key(
        "spark.kubernetes.executor.watch.streamingList",
        Kind.BOOL,
        "true",
        "List executor pods as a streaming list where the API server offers one (a watch with "
        "sendInitialEvents: kube-apiserver 1.32 and 1.34 on): one request instead of a list and a watch, "
        "and a relist's peak memory a tenth of a list's at 10,000 executors (the pods arrive one at a time). "
        "A server that refuses it gets lists from then on; set false for API servers older than 1.27, "
        "which ignore it (the backend notices their first change and lists then).",
        field="snapshots.streaming_list",
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.enableApiPolling",
        Kind.BOOL,
        "true",
        "Also list executor pods periodically (internal Spark key).",
        field="snapshots.enable_api_polling",
    ),
    Key(
        "spark.kubernetes.executor.apiPollingInterval",
        Kind.DURATION_MS,
        "30s",
        "Time between full lists of executor pods.",
        field="snapshots.api_polling_interval",
        check=_POSITIVE_TIME,
    ),
    Key(
        "spark.kubernetes.executor.enablePollingWithResourceVersion",
        Kind.BOOL,
        "false",
        "List with resourceVersion=0 (served from the API server cache), ignoring older lists.",
        field="snapshots.enable_polling_with_resource_version",
    ),
    Key(
        "spark.kubernetes.executor.eventProcessingInterval",
        Kind.DURATION_MS,
        "1s",
        "Time between two handlings of pod snapshots by the lifecycle manager.",
        field="snapshots.event_processing_interval",
        check=_POSITIVE_TIME,
    ),
    Key(
        "spark.kubernetes.executor.missingPodDetectDelta",
        Kind.DURATION_MS,
        "30s",
        "A registered executor missing from pod lists for longer than this is removed.",
        field="snapshots.missing_pod_detect_delta",
        check=_POSITIVE_TIME,
    ),
    Key(
        "spark.kubernetes.executor.checkAllContainers",
        Kind.BOOL,
        "true",
        "A pod with any failed container counts as failed (not only the Spark container).",
        field="snapshots.check_all_containers",
    ),
    Key(
        "spark.kubernetes.executorSnapshotsSubscribersShutdownGracePeriod",
        Kind.DURATION_S,
        "20s",
        "How long stopping waits for snapshot subscribers to finish.",
        field="snapshots.subscribers_shutdown_grace_period",
        check=_POSITIVE_SECONDS,
    ),
)

LIFECYCLE_KEYS: tuple[Key, ...] = (
    Key(
        "spark.kubernetes.executor.deleteOnTermination",
        Kind.BOOL,
        "true",
        "Delete finished or failed executor pods; if false they are labelled `spark-exec-inactive=true`.",
        field="lifecycle.delete_on_termination",
    ),
    Key(
        "spark.kubernetes.executor.decommissionLabel",
        Kind.STRING,
        None,
        "Label put on executor pods being killed or decommissioned (for disruption budgets).",
        field="lifecycle.decommission_label",
        check=LABEL_KEY,
    ),
    Key(
        "spark.kubernetes.executor.decommissionLabelValue",
        Kind.STRING,
        None,
        "Value of that label (empty when unset).",
        field="lifecycle.decommission_label_value",
        check=LABEL_VALUE,
    ),
    Key(
        "spark.kubernetes.executor.disruption.decommissionOnNotice",
        Kind.BOOL,
        "true",
        "Decommission an executor as soon as the cluster announces it will take the pod away: the pod's "
        "`DisruptionTarget` condition (eviction, preemption) or its node cordoned or carrying one of "
        "`disruption.nodeTaints`. Spark's graceful path runs (its blocks migrate when "
        "`spark.decommission.enabled` and `spark.storage.decommission.*` are on) and a replacement is "
        "requested at once. See docs/disruptions.md.",
        field="lifecycle.disruption_decommission",
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.disruption.nodeTaints",
        Kind.LIST,
        "node.kubernetes.io/unschedulable,ToBeDeletedByClusterAutoscaler,karpenter.sh/disrupted,"
        "karpenter.sh/disruption",
        "Node taint keys that announce a node's removal (`node.kubernetes.io/unschedulable` also matches "
        "a cordoned node). Reading nodes needs get/list/watch on nodes for the driver's service account; "
        "without it one warning is logged and only the pods' condition counts. Empty: nodes are not read.",
        field="lifecycle.disruption_taints",
        check=each(LABEL_KEY),
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.disruption.nodeCheckInterval",
        Kind.DURATION_MS,
        "5s",
        "How often nodes are listed (one request, from the API server's cache) for cordons and taints.",
        field="lifecycle.disruption_node_interval",
        check=_POSITIVE_TIME,
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.autoscalerHints.enabled",
        Kind.BOOL,
        "false",
        "While an executor runs tasks, holds cached blocks or holds live shuffle outputs (facts from the "
        "driver, through the PySpark bridge), its pod carries `cluster-autoscaler.kubernetes.io/"
        "safe-to-evict: \"false\"`, `karpenter.sh/do-not-disrupt: \"true\"` and a high "
        "`controller.kubernetes.io/pod-deletion-cost`; an idle executor holding nothing has them removed. "
        "Off by default: it keeps nodes that hold shuffle data, which costs money. Needs patch on pods "
        "(the driver's role has it). See docs/disruptions.md.",
        field="lifecycle.autoscaler_hints",
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.autoscalerHints.interval",
        Kind.DURATION_MS,
        "5s",
        "How often the driver's facts are read for the autoscaler hints; at most 50 pods are patched per "
        "interval, and only those whose state changed.",
        field="lifecycle.autoscaler_hints_interval",
        check=_POSITIVE_TIME,
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.autoscalerHints.deletionCost",
        Kind.INT,
        "1000000",
        "The `controller.kubernetes.io/pod-deletion-cost` of an executor that holds work (ReplicaSet "
        "scale-down removes cheaper pods first).",
        field="lifecycle.autoscaler_hints_cost",
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.nodeFailures.threshold",
        Kind.INT,
        "0",
        "Avoid failing nodes: after this many executor failures on one node within "
        "`nodeFailures.window` that are not the application's own (the kubelet evicted the pod, the "
        "container could not start, or it was killed by a signal other than an OOM kill), new executor "
        "pods get a node anti-affinity against that node until the window expires; status() lists the "
        "avoided nodes. `0`: off.",
        field="lifecycle.node_failure_threshold",
        check=at_least(0, "must be 0 (off) or more"),
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.nodeFailures.window",
        Kind.DURATION_MS,
        "10min",
        "The window of `nodeFailures.threshold`: failures older than this are forgotten, and a node is "
        "avoided until its failures fall out of it.",
        field="lifecycle.node_failure_window",
        check=_POSITIVE_TIME,
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.allocation.quotaAware",
        Kind.BOOL,
        "true",
        "Before creating executor pods, read the namespace's ResourceQuotas (and LimitRanges' container "
        "defaults) and cap the round at what fits, logging once which quota and resource allocation waits "
        "for; allocation resumes when the quota frees. Each kind is listed once (the LimitRanges only once a "
        "quota exists), then watched: at most two lists and two open watches, no request per round. Needs "
        "list and watch on resourcequotas and limitranges (one warning and no cap without list; a list per "
        "round without watch). Scoped quotas are not modelled (the API server enforces them).",
        field="lifecycle.quota_aware",
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.oom.overheadFactor",
        Kind.FLOAT,
        "1.0",
        "OOM-aware replacements: after each OOM kill of an executor (exit 137, `OOMKilled`) the memory "
        "overhead of its resource profile's new pods is multiplied by this (e.g. `1.5`), up to "
        "`oom.maxOverheadFactor`. The heap (`spark.executor.memory`) is unchanged. `1.0`: off. The loss "
        "reason, status() and the log say what was raised.",
        field="lifecycle.oom_overhead_factor",
        check=between(1.0, 10.0, "must be between 1.0 (off) and 10.0"),
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.oom.maxOverheadFactor",
        Kind.FLOAT,
        "2.0",
        "The bound of the OOM-aware raise: the overhead is at most the configured one times this.",
        field="lifecycle.oom_max_overhead_factor",
        check=between(1.0, 100.0, "must be between 1.0 and 100.0"),
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.dynamicAllocation.deleteGracePeriod",
        Kind.DURATION_MS,
        "5s",
        "Wait after a graceful executor kill before force-deleting a pod still running.",
        field="lifecycle.delete_grace_period",
        check=at_least(0, "must be 0 or more"),
    ),
    Key(
        "spark.kubernetes.executor.deletedExecutorsCacheTimeout",
        Kind.DURATION_S,
        "180s",
        "How long removed executors are remembered, so late pod events are not handled twice.",
        field="lifecycle.deleted_executors_cache_timeout",
        check=at_least(0, "must be 0 or more"),
    ),
    Key(
        "spark.executor.maxNumFailures",
        Kind.INT,
        None,
        "Executor failures before the application fails; unset: max(3, 2 x the executor count "
        "(maxExecutors with dynamic allocation, else spark.executor.instances or 0)).",
        field="lifecycle.max_executor_failures",
        check=_POSITIVE_INT,
        custom=True,
    ),
    Key(
        "spark.executor.failuresValidityInterval",
        Kind.DURATION_MS,
        None,
        "Executor failures older than this are forgotten; unset: never.",
        field="lifecycle.failures_validity_interval",
        check=at_least(0, "must be 0 or more"),
    ),
    Key(
        "spark.kubernetes.progress.interval",
        Kind.DURATION_MS,
        "1s",
        "Least time between two progress lines on stderr (`executors: 8 requested, 2 pending (reason), "
        "6 running, 5 registered`, one per change, also logged at INFO on `k8s_backend.progress`); "
        "`0`: no progress line.",
        field="progress_interval",
        check=at_least(0, "must be 0 (off) or more"),
        has_spark_entry=False,
    ),
)

SCALING_KEYS: tuple[Key, ...] = (
    Key(
        "spark.executor.instances",
        Kind.INT,
        "2",
        "Executor count without dynamic allocation; with it, a floor for the initial count.",
        field="scaling.executor_instances",
        check=at_least(0),
        spark_default="<undefined>",
        spark_default_reason="Spark's Kubernetes backend uses 2 when unset (SchedulerBackendUtils)",
    ),
    Key(
        "spark.dynamicAllocation.enabled",
        Kind.BOOL,
        "false",
        "Dynamic allocation: Spark asks for executors as the load changes.",
        field="scaling.dynamic_allocation",
    ),
    Key(
        "spark.dynamicAllocation.minExecutors",
        Kind.INT,
        "0",
        "Fewest executors with dynamic allocation.",
        field="scaling.min_executors",
    ),
    Key(
        "spark.dynamicAllocation.maxExecutors",
        Kind.INT,
        INT_MAX,
        "Most executors with dynamic allocation; must not be 0.",
        field="scaling.max_executors",
    ),
    Key(
        "spark.dynamicAllocation.initialExecutors",
        Kind.INT,
        None,
        "Executors at start with dynamic allocation: the largest of this, minExecutors and "
        "spark.executor.instances; must not exceed maxExecutors.",
        field="scaling.initial_executors",
        fallbacks=("spark.dynamicAllocation.minExecutors",),
        custom=True,
    ),
    Key(
        "spark.dynamicAllocation.executorIdleTimeout",
        Kind.DURATION_S,
        "60s",
        "Idle time before dynamic allocation removes an executor; newer pending requests are kept that long.",
        field="scaling.executor_idle_timeout",
        check=at_least(0, "must be 0 or more"),
    ),
    Key(
        "spark.scheduler.minRegisteredResourcesRatio",
        Kind.FLOAT,
        "0.8",
        "Share of the wanted executors that must register before scheduling starts.",
        field="scaling.min_registered_ratio",
        check=between(0, 1),
        spark_default="<undefined>",
        spark_default_reason="Spark's Kubernetes backend uses 0.8 when unset",
    ),
)

METRICS_KEYS: tuple[Key, ...] = (
    Key(
        "spark.kubernetes.metrics.port",
        Kind.INT,
        "0",
        "Serve Prometheus metrics of the backend at `http://<host>:<port>/metrics` (one registry per "
        "backend, see docs/metrics.md); `0`: off.",
        field="metrics_port",
        check=between(0, 65535, "must be a TCP port from 1 to 65535, or 0 (off)"),
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.metrics.host",
        Kind.STRING,
        "127.0.0.1",
        "Address the metrics server binds to (`0.0.0.0` or `::` for every interface).",
        field="metrics_host",
        check=not_empty(),
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.report.timeline",
        Kind.STRING,
        None,
        "At `stop()`, write the executor timeline to this file: self-contained HTML, one row of spans "
        "per executor, the target and markers (see docs/executors.md, Executor timeline). A path that "
        "cannot be written is refused when the backend starts.",
        field="report_timeline",
        check=not_empty(),
        has_spark_entry=False,
    ),
)
