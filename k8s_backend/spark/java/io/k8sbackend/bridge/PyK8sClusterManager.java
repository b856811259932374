package io.k8sbackend.bridge;

import java.lang.reflect.Field;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.spark.SparkContext;
import org.apache.spark.resource.ResourceProfileManager;
import org.apache.spark.scheduler.ExternalClusterManager;
import org.apache.spark.scheduler.SchedulerBackend;
import org.apache.spark.scheduler.TaskScheduler;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Spark's entry point for {@code pyk8s://} masters (registered through META-INF/services).
 *
 * <p>A prefix of our own keeps clear of Spark's Kubernetes manager, which claims every master starting
 * with {@code k8s}. The Python backend comes from the factory that Python installed in this JVM.
 */
public final class PyK8sClusterManager implements ExternalClusterManager {
    /** The master URL prefix this manager claims. */
    public static final String PREFIX = "pyk8s://";

    /** Bumped whenever the Java/Python calls change, so Python can refuse a stale jar. */
    public static final int PROTOCOL_VERSION = 2;

    private static final Logger LOG = LoggerFactory.getLogger(PyK8sClusterManager.class);
    private static final AtomicReference<PythonBackendFactory> FACTORY = new AtomicReference<>();

    /** Install the factory that creates Python backends (one per SparkContext of this JVM). */
    public static void install(PythonBackendFactory factory) {
        FACTORY.set(factory);
    }

    /** Forget the installed factory. */
    public static void uninstall() {
        FACTORY.set(null);
    }

    public static boolean isInstalled() {
        return FACTORY.get() != null;
    }

    public static int protocolVersion() {
        return PROTOCOL_VERSION;
    }

    /** The Spark version this jar runs in (the same jar may have been compiled against another 4.x). */
    public static String sparkVersion() {
        return org.apache.spark.package$.MODULE$.SPARK_VERSION();
    }

    @Override
    public boolean canCreate(String masterURL) {
        return masterURL != null && masterURL.startsWith(PREFIX);
    }

    @Override
    public TaskScheduler createTaskScheduler(SparkContext sc, String masterURL) {
        return new TaskSchedulerImpl(sc);
    }

    @Override
    public SchedulerBackend createSchedulerBackend(SparkContext sc, String masterURL, TaskScheduler scheduler) {
        PythonBackendFactory factory = FACTORY.get();
        if (factory == null) {
            throw new IllegalStateException("Master " + masterURL + " is served by k8s_backend, whose Python side is "
                + "not installed in this driver: create the session with k8s_backend.spark.session(...), "
                + "call k8s_backend.spark.prepare(...) before SparkSession.builder.getOrCreate(), "
                + "or launch the script with the k8s-backend submit command.");
        }
        enableResourceProfiles(sc);
        return new PyK8sSchedulerBackend((TaskSchedulerImpl) scheduler, sc, masterURL, factory);
    }

    @Override
    public void initialize(TaskScheduler scheduler, SchedulerBackend backend) {
        ((TaskSchedulerImpl) scheduler).initialize(backend);
    }

    /**
     * Spark's ResourceProfileManager accepts custom profiles only for masters it recognises (YARN,
     * {@code k8s://}, standalone). Executors here are Kubernetes pods, so the manager is told it runs on
     * Kubernetes: the same rules then apply (custom profiles need dynamic allocation).
     */
    static void enableResourceProfiles(SparkContext sc) {
        ResourceProfileManager manager = sc.resourceProfileManager();
        if (manager == null) {
            LOG.warn("No ResourceProfileManager yet; custom resource profiles will be refused");
            return;
        }
        try {
            Field field = findField(ResourceProfileManager.class, "isK8s");
            field.setAccessible(true);
            field.setBoolean(manager, true);
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.warn("Could not enable custom resource profiles for " + PREFIX + " masters: " + e);
        }
    }

    private static Field findField(Class<?> type, String name) throws NoSuchFieldException {
        for (Field field : type.getDeclaredFields()) {
            // Scala may mangle a private field's name (...$$isK8s) when a closure reads it.
            if (field.getName().equals(name) || field.getName().endsWith("$$" + name)) {
                return field;
            }
        }
        throw new NoSuchFieldException(type.getName() + "." + name);
    }
}
