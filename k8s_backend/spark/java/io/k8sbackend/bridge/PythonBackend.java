package io.k8sbackend.bridge;

/**
 * The Python side of one scheduler backend, implemented by a Py4J callback object
 * ({@code k8s_backend.spark.bridge.PythonBackendCallbacks}).
 *
 * <p>Spark calls some of these while it holds its scheduler and backend locks, so every method that
 * asks for work only queues it and returns at once; Python's own threads do the work. Composite
 * arguments are JSON strings.
 */
public interface PythonBackend {
    /** Queue the backend's start. */
    void start();

    /** Stop the backend and wait (bounded on the Python side) until it has cleaned up. */
    void stop();

    /**
     * Queue new executor targets: {@code {"targets": {"<profile id>": n}, "profiles": [ {...} ]}}, each
     * profile described from {@code ResourceProfile.getResourcesForClusterManager}.
     */
    void requestTotalExecutors(String requestJson);

    /** Queue the removal of executors: a JSON array of executor ids. */
    void killExecutors(String executorIdsJson);

    /** Queue the decommissioning of executors: a JSON array of executor ids. */
    void decommissionExecutors(String executorIdsJson, boolean triggeredByExecutor);

    /**
     * Queue the end of a decommissioning executor's decommission, with the removal reason Spark was
     * given for it: the executor's own ({@code "Finished decommissioning"} once it has no running task and,
     * with block migration on, all its blocks migrated) or another one (lost before it finished).
     */
    void decommissionEnded(String executorId, String reason);

    /** Whether an executor's registration must be refused (answered at once). */
    boolean isExecutorExcluded(String executorId, String hostname);

    /** Whether enough executors registered to start scheduling (answered at once). */
    boolean sufficientResourcesRegistered();

    /** The application id (answered at once). */
    String applicationId();

    /**
     * Spark's GenerateExecID: a new executor id for the executor of pod {@code podName}, whose id is
     * {@code EXECID} (statefulset and deployment allocators), answered at once; Python labels the pod
     * with it. 0 or less: no id can be given.
     */
    int generateExecId(String podName);
}
