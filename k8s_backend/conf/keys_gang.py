"""Keys of k8s_backend's own features: gang scheduling, stuck executors, recovery after a restart."""

from __future__ import annotations

from k8s_backend.conf.spec import DNS_LABEL, LABEL_VALUE, Key, Kind, at_least, greater_than, one_of

GANG_KEYS: tuple[Key, ...] = (
    Key(
        "spark.kubernetes.gang.enabled",
        Kind.BOOL,
        "false",
        "Built-in all-or-nothing start (for clusters without a gang scheduler): the application is held "
        "until `spark.kubernetes.gang.minExecutors` executors run.",
        field="gang.enabled",
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.gang.minExecutors",
        Kind.INT,
        None,
        "Executors that must run together (the gang's minMember); unset: the initial executor count.",
        field="gang.min_executors",
        check=greater_than(0, "must be a positive integer (> 0)"),
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.gang.timeout",
        Kind.DURATION_S,
        "300s",
        "How long the gang may wait for its executors (YuniKorn's placeholderTimeoutInSeconds, and the "
        "built-in start's hold time).",
        field="gang.timeout",
        check=greater_than(0, "must be a positive duration"),
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.gang.style",
        Kind.STRING,
        "Soft",
        "On gang timeout: `Soft` goes on with the executors that run, `Hard` fails the application with "
        "the reasons the others are pending.",
        field="gang.style",
        check=one_of("Soft", "Hard"),
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.yunikorn.enabled",
        Kind.BOOL,
        None,
        "Add YuniKorn's app-id, queue, task-group and scheduling-policy annotations to executor pods; "
        "unset: on when the scheduler name is `yunikorn`.",
        field="gang.yunikorn",
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.yunikorn.queue",
        Kind.STRING,
        None,
        "YuniKorn queue (label and annotation `yunikorn.apache.org/queue`), e.g. `root.default`.",
        field="gang.yunikorn_queue",
        check=LABEL_VALUE,  # it becomes a label value of every executor pod
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.yunikorn.taskGroupName",
        Kind.STRING,
        "spark-executor",
        "Name of the executors' YuniKorn task group.",
        field="gang.yunikorn_task_group",
        check=DNS_LABEL,
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.volcano.queue",
        Kind.STRING,
        None,
        "Volcano queue of the application's PodGroup (`spec.queue`).",
        field="gang.volcano_queue",
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.volcano.priorityClassName",
        Kind.STRING,
        None,
        "priorityClassName of the application's Volcano PodGroup.",
        field="gang.volcano_priority_class",
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.scheduler.volcano.podGroupTemplateFile",
        Kind.STRING,
        None,
        "Volcano PodGroup template (YAML or JSON); its minMember and minResources are kept when set, "
        "the queue and priority class from the keys above override it.",
        field="gang.volcano_template_file",
        has_spark_entry=False,
    ),
)

EXECUTOR_TRACKING_KEYS: tuple[Key, ...] = (
    Key(
        "spark.kubernetes.executor.stuckTimeout",
        Kind.DURATION_S,
        "60s",
        "Executors pending longer than this have their reason (Unschedulable, ImagePullBackOff, ...) "
        "logged once per change and shown in `status()`.",
        field="lifecycle.stuck_timeout",
        check=greater_than(0, "must be a positive duration"),
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.imagePullFailTimeout",
        Kind.DURATION_S,
        "120s",
        "Fail the application when an executor image cannot be pulled for this long and no executor of "
        "its profile ever ran; 0 disables.",
        field="lifecycle.image_pull_fail_timeout",
        check=at_least(0, "must be 0 (disabled) or a positive duration"),
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.stopExitWait",
        Kind.DURATION_S,
        "2s",
        "At stop, how long executors that the driver told to stop may take to exit by themselves before "
        "their pods are deleted (they then end with exit 0 instead of 143); 0 deletes at once, as Spark. "
        "Only with a driver attached.",
        field="lifecycle.stop_exit_wait",
        check=at_least(0, "must be 0 (delete at once) or a positive duration"),
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.stopTimeout",
        Kind.DURATION_S,
        "15s",
        "The longest `stop()` takes. Cleanup still under way then (a slow or unreachable API server) goes "
        "on in the background, with its deletes retried until they succeed or the process exits.",
        field="lifecycle.stop_timeout",
        check=greater_than(0, "must be a positive duration"),
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.recovery.policy",
        Kind.STRING,
        "adopt",
        "When the backend starts for an application that already has executor pods: `adopt` the live ones "
        "that match (same driver URL and image) or `delete` them all.",
        field="lifecycle.recovery_policy",
        check=one_of("adopt", "delete"),
        has_spark_entry=False,
    ),
)
