package io.k8sbackend.bridge;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.executor.ExecutorMetrics;
import org.apache.spark.resource.ResourceProfile;
import org.apache.spark.SparkException;
import org.apache.spark.rpc.RpcAddress;
import org.apache.spark.rpc.RpcCallContext;
import org.apache.spark.rpc.RpcEndpointAddress;
import org.apache.spark.scheduler.ExecutorDecommission;
import org.apache.spark.scheduler.ExecutorDecommissionInfo;
import org.apache.spark.scheduler.ExecutorExited;
import org.apache.spark.scheduler.ExecutorKilled$;
import org.apache.spark.scheduler.ExecutorLossReason;
import org.apache.spark.scheduler.TaskSchedulerImpl;
import org.apache.spark.scheduler.cluster.CoarseGrainedClusterMessages.RemoveExecutor;
import org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend;
import org.apache.spark.status.api.v1.ExecutorSummary;
import org.apache.spark.scheduler.cluster.k8s.GenerateExecID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import scala.Function1;
import scala.Option;
import scala.PartialFunction;
import scala.Tuple2;
import scala.concurrent.Future;
import scala.concurrent.Future$;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractPartialFunction;
import scala.runtime.BoxedUnit;

/**
 * A CoarseGrainedSchedulerBackend whose cluster-manager side lives in Python.
 *
 * <p>Spark's RPC, executor registration and task scheduling stay in the superclass. This class only
 * forwards the cluster-manager hooks to {@link PythonBackend} and offers Python the few calls it needs
 * back (remove, disable, list executors). It makes no decisions: a forwarding failure is logged and
 * answered with a safe value, never with null.
 *
 * <p>The Python side stops its backend on its own when its process ends (an exception in the driver
 * script, SIGTERM, SIGINT, SIGHUP, a SparkContext that failed to start) and then says so through
 * {@link #pythonStopped()}; nothing is forwarded after that. A call that cannot reach Python while this JVM
 * shuts down (the Python process is gone) is logged once, in one line.
 */
public class PyK8sSchedulerBackend extends CoarseGrainedSchedulerBackend {
    private static final Logger LOG = LoggerFactory.getLogger(PyK8sSchedulerBackend.class);
    /** Spark's exit code for "too many executor failures" (ExecutorExitCode.EXCEED_MAX_EXECUTOR_FAILURES). */
    private static final int EXCEED_MAX_EXECUTOR_FAILURES = 11;

    private final SparkContext sc;
    private final String masterUrl;
    private final PythonBackend python;
    private volatile boolean stopping;
    // Python's backend has stopped and cleaned up (it said so): nothing more is forwarded to it.
    private volatile boolean pythonStopped;
    // A call could not reach Python while this JVM shuts down: the Python process is gone.
    private volatile boolean pythonGone;
    private volatile String appId;
    // Set by createDriverEndpoint(), which the superclass constructor calls before this class's
    // initializers run; it must therefore have no initializer of its own.
    private BridgeDriverEndpoint endpoint;

    public PyK8sSchedulerBackend(TaskSchedulerImpl scheduler, SparkContext sc, String masterUrl,
                                 PythonBackendFactory factory) {
        super(scheduler, sc.env().rpcEnv());
        this.sc = sc;
        this.masterUrl = masterUrl;
        PythonBackend created;
        try {
            created = factory.create(this, masterUrl, confJson(sc.conf()), driverUrl(sc.conf()));
        } catch (RuntimeException e) {
            throw new IllegalStateException("k8s_backend could not create its backend for " + masterUrl + ": "
                + e.getMessage(), e);
        }
        if (created == null) {
            throw new IllegalStateException("k8s_backend's Python factory returned no backend for " + masterUrl);
        }
        this.python = created;
    }

    public String masterUrl() {
        return masterUrl;
    }

    // ---- hooks Spark calls, forwarded to Python ---------------------------------------------------

    @Override
    public void start() {
        super.start();
        forward("start", () -> python.start());
    }

    @Override
    public void stop() {
        stopping = true;
        try {
            super.stop();
        } finally {
            if (pythonStopped) {
                LOG.info("k8s_backend's Python backend has already stopped and cleaned up");
            } else {
                forward("stop", () -> python.stop());
            }
        }
    }

    @Override
    public Future<Object> doRequestTotalExecutors(scala.collection.immutable.Map<ResourceProfile, Object> totals) {
        boolean sent;
        try {
            String request = Profiles.request(totals, conf());
            sent = forward("requestTotalExecutors", () -> python.requestTotalExecutors(request));
        } catch (RuntimeException e) {
            LOG.error("Could not describe the executor request " + totals, e);
            sent = false;
        }
        return Future$.MODULE$.successful((Object) Boolean.valueOf(sent));
    }

    @Override
    public Future<Object> doKillExecutors(scala.collection.immutable.Seq<String> executorIds) {
        String ids = idsJson(CollectionConverters.asJava(executorIds));
        boolean sent = forward("killExecutors", () -> python.killExecutors(ids));
        return Future$.MODULE$.successful((Object) Boolean.valueOf(sent));
    }

    @Override
    public scala.collection.immutable.Seq<String> decommissionExecutors(
            Tuple2<String, ExecutorDecommissionInfo>[] executorsAndDecomInfo, boolean adjustTargetNumExecutors,
            boolean triggeredByExecutor) {
        List<String> ids = new ArrayList<>();
        for (Tuple2<String, ExecutorDecommissionInfo> pair : executorsAndDecomInfo) {
            ids.add(pair._1());
        }
        String json = idsJson(ids);
        forward("decommissionExecutors", () -> python.decommissionExecutors(json, triggeredByExecutor));
        return super.decommissionExecutors(executorsAndDecomInfo, adjustTargetNumExecutors, triggeredByExecutor);
    }

    @Override
    public boolean isExecutorExcluded(String executorId, String hostname) {
        Boolean excluded = ask("isExecutorExcluded", () -> python.isExecutorExcluded(executorId, hostname));
        return excluded != null && excluded;
    }

    @Override
    public boolean sufficientResourcesRegistered() {
        Boolean sufficient = ask("sufficientResourcesRegistered", () -> python.sufficientResourcesRegistered());
        return sufficient != null && sufficient;
    }

    @Override
    public String applicationId() {
        String cached = appId;
        if (cached != null) {
            return cached;
        }
        String id = ask("applicationId", () -> python.applicationId());
        if (id == null || id.isEmpty()) {
            return super.applicationId();
        }
        appId = id;  // an application id never changes, and Spark asks for it often
        return id;
    }

    @Override
    public CoarseGrainedSchedulerBackend.DriverEndpoint createDriverEndpoint() {
        endpoint = new BridgeDriverEndpoint();
        return endpoint;
    }

    // ---- calls Python makes ---------------------------------------------------------------------

    /** Report an executor as gone: {@code ExecutorExited(exitCode, exitCausedByApp, message)}. */
    public boolean removeExecutorExited(String executorId, int exitCode, boolean exitCausedByApp, String message) {
        return remove(executorId, new ExecutorExited(exitCode, exitCausedByApp, message));
    }

    /** Report an executor the driver asked to kill ({@code ExecutorKilled}). */
    public boolean removeExecutorKilled(String executorId) {
        return remove(executorId, ExecutorKilled$.MODULE$);
    }

    /**
     * Decommission an executor the cluster is about to take away (Python noticed a drain, an eviction or
     * an autoscaler's taint): Spark's graceful path, block migration included when
     * {@code spark.storage.decommission.*} is on. The executor target is kept, so the executor is replaced;
     * Python already labelled the pod, so the hook is not forwarded back to it.
     */
    @SuppressWarnings("unchecked")
    public boolean decommissionExecutorByBackend(String executorId, String reason) {
        if (stopping) {
            return false;
        }
        try {
            Tuple2<String, ExecutorDecommissionInfo>[] one = new Tuple2[] {
                new Tuple2<>(executorId, new ExecutorDecommissionInfo(reason, Option.empty()))};
            return !super.decommissionExecutors(one, false, false).isEmpty();
        } catch (RuntimeException e) {
            LOG.warn("Could not decommission executor " + executorId, e);
            return false;
        }
    }

    /** Stop scheduling tasks on an executor until its loss reason is known. */
    public boolean disableExecutorById(String executorId) {
        BridgeDriverEndpoint current = endpoint;
        if (stopping || current == null) {
            return false;
        }
        try {
            return current.disableExecutor(executorId);
        } catch (RuntimeException e) {
            LOG.warn("Could not disable executor " + executorId, e);
            return false;
        }
    }

    /** Registered executors as a JSON object: executor id to registration time (epoch milliseconds). */
    public String registeredExecutorsJson() {
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : CollectionConverters.asJava(getExecutorsWithRegistrationTs()).entrySet()) {
            out.put(e.getKey(), e.getValue().toString());
        }
        return Json.object(out);
    }

    /** Per executor: running tasks, cached RDD blocks, live shuffle outputs (see {@link ExecutorActivity}). */
    public String executorActivityJson() {
        return ExecutorActivity.json(sc);
    }

    /**
     * The active executors (and the driver's entry) as Spark's status store lists them, what Spark's
     * ExecutorRollPlugin reads ({@code statusStore.executorList(true)}), as a JSON array for Python's
     * executor roller: one round trip per interval. Peak JVM memory is 0 when not yet reported, as in
     * Spark's plugin.
     */
    public String executorSummariesJson() {
        List<String> out = new ArrayList<>();
        for (ExecutorSummary e : CollectionConverters.asJava(sc.statusStore().executorList(true))) {
            Map<String, String> m = new LinkedHashMap<>();
            m.put("id", Json.quote(e.id()));
            m.put("addTime", Long.toString(e.addTime().getTime()));
            m.put("totalTasks", Integer.toString(e.totalTasks()));
            m.put("failedTasks", Integer.toString(e.failedTasks()));
            m.put("totalDuration", Long.toString(e.totalDuration()));
            m.put("totalGCTime", Long.toString(e.totalGCTime()));
            m.put("totalShuffleWrite", Long.toString(e.totalShuffleWrite()));
            m.put("diskUsed", Long.toString(e.diskUsed()));
            Option<ExecutorMetrics> peak = e.peakMemoryMetrics();
            m.put("peakJVMHeapMemory", Long.toString(peak.isDefined() ? peak.get().getMetricValue("JVMHeapMemory") : 0L));
            m.put("peakJVMOffHeapMemory",
                Long.toString(peak.isDefined() ? peak.get().getMetricValue("JVMOffHeapMemory") : 0L));
            out.add(Json.object(m));
        }
        return Json.array(out);
    }

    /**
     * Python's backend has stopped and removed what it created (called by Python once, when its stop
     * finished, whoever asked for it): later hooks are no longer forwarded, and {@link #stop()} has
     * nothing left to pass.
     */
    public void pythonStopped() {
        pythonStopped = true;
    }

    /** Python gave up on the application: stop the SparkContext, as Spark's allocator exits on it. */
    public void failApplication(String reason) {
        LOG.error("k8s_backend stops the application: " + reason);
        Thread stopper = new Thread(() -> sc.stop(EXCEED_MAX_EXECUTOR_FAILURES), "k8s-backend-fail-application");
        stopper.setDaemon(true);
        stopper.start();
    }

    // ---- helpers ----------------------------------------------------------------------------------

    private boolean remove(String executorId, ExecutorLossReason reason) {
        if (stopping) {
            return false;  // the driver endpoint is going away with every executor
        }
        try {
            removeExecutor(executorId, reason);
            return true;
        } catch (RuntimeException e) {
            LOG.warn("Could not remove executor " + executorId, e);
            return false;
        }
    }

    private boolean forward(String hook, Runnable call) {
        if (!reachable(hook)) {
            return false;
        }
        try {
            call.run();
            return true;
        } catch (RuntimeException e) {
            failed(hook, "Could not pass " + hook + " to k8s_backend's Python backend", e);
            return false;
        }
    }

    private <T> T ask(String hook, Supplier<T> call) {
        if (!reachable(hook)) {
            return null;
        }
        try {
            return call.get();
        } catch (RuntimeException e) {
            failed(hook, "k8s_backend's Python backend did not answer " + hook, e);
            return null;
        }
    }

    /** Whether a hook still goes to Python: not once its backend stopped or its process is gone. */
    private boolean reachable(String hook) {
        if (pythonStopped || pythonGone) {
            LOG.debug("Not passing " + hook + ": k8s_backend's Python backend has stopped");
            return false;
        }
        return true;
    }

    /**
     * Log a failed call. Python may have stopped while the call was under way, or its process may be
     * gone while this JVM shuts down (the JVM ends when its Python parent does): that is said once, in
     * one line. Any other failure is an error, with its stack trace.
     */
    private void failed(String hook, String what, RuntimeException e) {
        if (pythonStopped) {
            LOG.info("k8s_backend's Python backend stopped and cleaned up on its own while " + hook
                + " was passed to it (" + e.getMessage() + ")");
        } else if (unreachable(e) && jvmShuttingDown()) {
            if (!pythonGone) {
                pythonGone = true;
                LOG.warn(what + ": the Python driver process is gone while this JVM shuts down (" + rootCause(e)
                    + "). It removes its executor pods itself when its script ends, raises or gets SIGTERM, "
                    + "SIGINT or SIGHUP; gone without that (e.g. SIGKILL), it leaves them to the driver pod's "
                    + "owner references (cluster mode) or to be deleted by hand.");
            }
        } else {
            LOG.error(what + ": " + e.getMessage(), e);
        }
    }

    /** Whether a Py4J call failed because the Python side could not be reached (a network failure). */
    static boolean unreachable(Throwable e) {
        for (Throwable cause = e; cause != null; cause = cause.getCause()) {
            if (cause instanceof java.io.IOException
                    || cause.getClass().getName().equals("py4j.Py4JNetworkException")) {
                return true;
            }
            if (cause.getCause() == cause) {
                break;
            }
        }
        return false;
    }

    private static String rootCause(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root.getClass().getSimpleName() + ": " + root.getMessage();
    }

    /** Whether this JVM runs its shutdown hooks (a hook can no longer be added then). */
    static boolean jvmShuttingDown() {
        Thread probe = new Thread(() -> { }, "k8s-backend-shutdown-probe");
        try {
            Runtime.getRuntime().addShutdownHook(probe);
            Runtime.getRuntime().removeShutdownHook(probe);
            return false;
        } catch (IllegalStateException e) {
            return true;
        }
    }

    private static String idsJson(List<String> ids) {
        List<String> quoted = new ArrayList<>(ids.size());
        for (String id : ids) {
            quoted.add(Json.quote(id));
        }
        return Json.array(quoted);
    }

    private static String confJson(SparkConf conf) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Tuple2<String, String> pair : conf.getAll()) {
            out.put(pair._1(), Json.quote(pair._2()));
        }
        return Json.object(out);
    }

    /**
     * Answers an executor's GenerateExecID (its id is EXECID: statefulset and deployment allocators) with
     * an id from Python, as a string like Spark's driver; Python labels the pod {@code spark-exec-id=<id>}.
     */
    final class GenerateExecIdReply extends AbstractPartialFunction<Object, BoxedUnit> {
        private final RpcCallContext context;

        GenerateExecIdReply(RpcCallContext context) {
            this.context = context;
        }

        @Override
        public boolean isDefinedAt(Object message) {
            return message instanceof GenerateExecID;
        }

        @Override
        @SuppressWarnings("unchecked")
        public <A1, B1> B1 applyOrElse(A1 message, Function1<A1, B1> fallback) {
            if (!(message instanceof GenerateExecID)) {
                return fallback.apply(message);
            }
            String podName = ((GenerateExecID) message).podName();
            Integer id = ask("generateExecId", () -> python.generateExecId(podName));
            if (id == null || id <= 0) {
                context.sendFailure(new SparkException("k8s_backend could not give an executor id to pod " + podName));
            } else {
                context.reply(Integer.toString(id));
            }
            return (B1) BoxedUnit.UNIT;
        }
    }

    private static String driverUrl(SparkConf conf) {
        // The driver's RpcEnv is up by now, so spark.driver.host and spark.driver.port are set.
        return RpcEndpointAddress.apply(conf.get("spark.driver.host"), conf.getInt("spark.driver.port", 0),
            CoarseGrainedSchedulerBackend.ENDPOINT_NAME()).toString();
    }

    /**
     * The superclass's one-way messages, unchanged, after a look at each {@code RemoveExecutor} of a
     * decommissioning executor: Python is told the reason the executor gave, which the superclass replaces
     * with its own {@code ExecutorDecommission} (so the listener bus never carries it). The executor sends
     * {@code "Finished decommissioning"} when it exits once no task runs and, with block migration on,
     * its block manager reports every block migrated.
     */
    final class DecommissionEndWatch extends AbstractPartialFunction<Object, BoxedUnit> {
        private final PartialFunction<Object, BoxedUnit> inner;

        DecommissionEndWatch(PartialFunction<Object, BoxedUnit> inner) {
            this.inner = inner;
        }

        @Override
        public boolean isDefinedAt(Object message) {
            return inner.isDefinedAt(message);
        }

        @Override
        public <A1, B1> B1 applyOrElse(A1 message, Function1<A1, B1> fallback) {
            if (message instanceof RemoveExecutor) {
                RemoveExecutor remove = (RemoveExecutor) message;
                String executorId = remove.executorId();
                boolean decommissioning;
                synchronized (PyK8sSchedulerBackend.this) {
                    decommissioning = executorsPendingDecommission().contains(executorId);
                }
                if (decommissioning) {
                    String reason = remove.reason().message();
                    forward("decommissionEnded", () -> python.decommissionEnded(executorId, reason));
                }
            }
            return inner.applyOrElse(message, fallback);
        }
    }

    /**
     * Like Spark's Kubernetes driver endpoint: a disconnected executor is only disabled, so that the loss
     * reason Python derives from the pod (exit code and explanation) is the one Spark records.
     */
    final class BridgeDriverEndpoint extends CoarseGrainedSchedulerBackend.DriverEndpoint {
        /** Like Spark's KubernetesDriverEndpoint: GenerateExecID first, then the superclass's messages. */
        @Override
        public PartialFunction<Object, BoxedUnit> receiveAndReply(RpcCallContext context) {
            return new GenerateExecIdReply(context).orElse(super.receiveAndReply(context));
        }

        /** The superclass's messages, a decommissioning executor's removal reason passed to Python first. */
        @Override
        public PartialFunction<Object, BoxedUnit> receive() {
            return new DecommissionEndWatch(super.receive());
        }

        @Override
        public void onDisconnected(RpcAddress remoteAddress) {
            Option<String> found = addressToExecutorId().get(remoteAddress);
            if (found.isEmpty()) {
                super.onDisconnected(remoteAddress);
                return;
            }
            String executorId = found.get();
            boolean decommissioning;
            synchronized (PyK8sSchedulerBackend.this) {
                decommissioning = executorsPendingDecommission().contains(executorId);
            }
            if (decommissioning) {
                removeExecutor(executorId, new ExecutorDecommission(Option.empty(),
                    ExecutorDecommission.apply$default$2()));
            } else {
                disableExecutor(executorId);
            }
        }
    }
}
