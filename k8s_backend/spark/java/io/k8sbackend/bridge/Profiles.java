package io.k8sbackend.bridge;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.SparkConf;
import org.apache.spark.resource.ExecutorResourceRequest;
import org.apache.spark.resource.ResourceProfile;
import org.apache.spark.resource.ResourceProfile$;
import org.apache.spark.resource.TaskResourceRequest;

import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Describes resource profiles for Python: what Spark's cluster managers size executors from
 * ({@code ResourceProfile.getResourcesForClusterManager}), plus the profile's own requests, so that
 * Python can tell an explicit memory overhead from a computed one.
 */
final class Profiles {
    private static final String OVERHEAD_FACTOR = "spark.executor.memoryOverheadFactor";
    private static final String K8S_OVERHEAD_FACTOR = "spark.kubernetes.memoryOverheadFactor";
    private static final String MIN_OVERHEAD = "spark.executor.minMemoryOverhead";

    private Profiles() {
    }

    /** {@code {"targets": {...}, "profiles": [...]}} for one doRequestTotalExecutors call. */
    static String request(scala.collection.immutable.Map<ResourceProfile, Object> totals, SparkConf conf) {
        Map<String, String> targets = new LinkedHashMap<>();
        List<String> profiles = new ArrayList<>();
        for (Map.Entry<ResourceProfile, Object> e : CollectionConverters.asJava(totals).entrySet()) {
            ResourceProfile profile = e.getKey();
            targets.put(Integer.toString(profile.id()), String.valueOf(((Number) e.getValue()).intValue()));
            profiles.add(describe(profile, conf));
        }
        Map<String, String> request = new LinkedHashMap<>();
        request.put("targets", Json.object(targets));
        request.put("profiles", Json.array(profiles));
        return Json.object(request);
    }

    static String describe(ResourceProfile profile, SparkConf conf) {
        // The same overhead inputs as Spark's Kubernetes executor builder; Python may size differently.
        double factor = conf.contains(OVERHEAD_FACTOR)
            ? conf.getDouble(OVERHEAD_FACTOR, 0.1)
            : conf.getDouble(K8S_OVERHEAD_FACTOR, 0.1);
        long minOverhead = conf.getSizeAsMb(MIN_OVERHEAD, "384m");
        ResourceProfile.ExecutorResourcesOrDefaults resources = ResourceProfile$.MODULE$
            .getResourcesForClusterManager(profile.id(), profile.executorResources(), minOverhead, factor, conf,
                true, scala.collection.immutable.Map$.MODULE$.<String, String>empty());

        Map<String, String> out = new LinkedHashMap<>();
        out.put("id", Integer.toString(profile.id()));
        Option<Object> cores = resources.cores();
        out.put("cores", cores.isDefined() ? cores.get().toString() : "null");
        out.put("memoryMiB", Long.toString(resources.executorMemoryMiB()));
        out.put("memoryOverheadMiB", Long.toString(resources.memoryOverheadMiB()));
        out.put("memoryOffHeapMiB", Long.toString(resources.memoryOffHeapMiB()));
        out.put("pysparkMemoryMiB", Long.toString(resources.pysparkMemoryMiB()));
        out.put("totalMemoryMiB", Long.toString(resources.totalMemMiB()));
        out.put("customResources", requests(CollectionConverters.asJava(resources.customResources())));
        out.put("executorRequests", requests(profile.executorResourcesJMap()));
        Map<String, String> tasks = new LinkedHashMap<>();
        for (Map.Entry<String, TaskResourceRequest> e : profile.taskResourcesJMap().entrySet()) {
            tasks.put(e.getKey(), Double.toString(e.getValue().amount()));
        }
        out.put("taskRequests", Json.object(tasks));
        return Json.object(out);
    }

    private static String requests(Map<String, ExecutorResourceRequest> requests) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<String, ExecutorResourceRequest> e : requests.entrySet()) {
            ExecutorResourceRequest r = e.getValue();
            Map<String, String> fields = new LinkedHashMap<>();
            fields.put("amount", Long.toString(r.amount()));
            fields.put("discoveryScript", Json.quote(r.discoveryScript()));
            fields.put("vendor", Json.quote(r.vendor()));
            out.put(e.getKey(), Json.object(fields));
        }
        return Json.object(out);
    }
}
