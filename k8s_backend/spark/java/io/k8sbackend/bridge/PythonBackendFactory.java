package io.k8sbackend.bridge;

/**
 * Creates the Python side of a backend; Python installs one with
 * {@link PyK8sClusterManager#install(PythonBackendFactory)} before it creates the SparkContext.
 */
public interface PythonBackendFactory {
    /**
     * @param backend the JVM backend, which Python calls back to remove or disable executors
     * @param masterUrl the {@code pyk8s://} master URL
     * @param confJson the Spark properties of the context, as a JSON object
     * @param driverUrl where executors reach the driver ({@code spark://CoarseGrainedScheduler@host:port})
     * @return the Python backend; a Python exception here fails the SparkContext with its message
     */
    PythonBackend create(PyK8sSchedulerBackend backend, String masterUrl, String confJson, String driverUrl);
}
