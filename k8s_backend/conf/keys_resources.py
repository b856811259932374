"""Keys table, executor resources part: memory, CPU and custom resources of the default profile."""

from __future__ import annotations

from k8s_backend.conf.spec import Key, Kind, at_least, between, greater_than

RESOURCE_KEYS: tuple[Key, ...] = (
    Key(
        "spark.executor.memory",
        Kind.SIZE_MIB,
        "1g",
        "Executor JVM heap (`SPARK_EXECUTOR_MEMORY`).",
        field="executor.default_profile.memory_mib",
        check=greater_than(0),
    ),
    Key(
        "spark.executor.memoryOverhead",
        Kind.SIZE_MIB,
        None,
        "Non-heap memory per executor; unset: max(factor x memory, minMemoryOverhead).",
        field="executor.default_profile.memory_overhead_mib",
        check=at_least(0),
    ),
    Key(
        "spark.executor.memoryOverheadFactor",
        Kind.FLOAT,
        "0.1",
        "Overhead as a share of executor memory when memoryOverhead is unset.",
        field="executor.memory_overhead_factor",
        fallbacks=("spark.kubernetes.memoryOverheadFactor",),
        check=greater_than(0, "must be a number greater than 0"),
    ),
    Key(
        "spark.kubernetes.memoryOverheadFactor",
        Kind.FLOAT,
        "0.1",
        "Legacy overhead factor, used when spark.executor.memoryOverheadFactor is unset.",
        check=at_least(0, "must be 0 or more"),
    ),
    Key(
        "spark.executor.minMemoryOverhead",
        Kind.SIZE_MIB,
        "384m",
        "Smallest overhead when it is computed from the factor.",
        field="executor.min_memory_overhead_mib",
        check=at_least(0),
    ),
    Key(
        "spark.executor.pyspark.memory",
        Kind.SIZE_MIB,
        None,
        "Memory of the Python workers, added to the pod's memory.",
        field="executor.default_profile.pyspark_memory_mib",
        check=at_least(0),
    ),
    Key(
        "spark.memory.offHeap.enabled",
        Kind.BOOL,
        "false",
        "Off-heap memory is used; its size is added to the pod's memory.",
        field="executor.default_profile.offheap_mib",
        custom=True,
    ),
    Key(
        "spark.memory.offHeap.size",
        Kind.SIZE_BYTES,
        "0",
        "Off-heap memory (a plain number is bytes); must be at least 1m when off-heap is enabled.",
        field="executor.default_profile.offheap_mib",
        check=at_least(0),
        custom=True,
    ),
    Key(
        "spark.executor.cores",
        Kind.INT,
        "1",
        "Cores per executor; also the CPU request when request.cores is unset.",
        field="executor.default_profile.cores",
        check=greater_than(0, "must be a positive integer (> 0)"),
    ),
    Key(
        "spark.task.cpus",
        Kind.FLOAT,
        "1",
        "CPUs per task (fractions allowed since Spark 4.2); at most spark.executor.cores.",
        field="executor.default_profile.task_cpus",
        check=between(1e-9, 2147483647, "must be a positive value between 1E-9 and 2147483647"),
    ),
    Key(
        "spark.executor.resource.<name>.<amount|vendor|discoveryScript>",
        Kind.PREFIX,
        None,
        "Custom executor resources such as GPUs: a whole amount (0 drops it) and a vendor domain "
        "(`nvidia.com` makes `nvidia.com/gpu`), both required.",
        field="executor.default_profile.custom_resources",
        custom=True,
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.executor.request.cores",
        Kind.CPU,
        None,
        "CPU request of default-profile executors (e.g. 0.5 or 500m); unset: spark.executor.cores.",
        field="executor.request_cores",
    ),
    Key(
        "spark.kubernetes.executor.limit.cores",
        Kind.CPU,
        None,
        "CPU limit of default-profile executors.",
        field="executor.limit_cores",
    ),
)
