package io.k8sbackend.bridge;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeSet;

import org.apache.spark.MapOutputTracker;
import org.apache.spark.MapOutputTrackerMaster;
import org.apache.spark.ShuffleStatus;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.MapStatus;
import org.apache.spark.status.api.v1.ExecutorSummary;

import scala.jdk.javaapi.CollectionConverters;

/**
 * What each executor holds and does, for the autoscaler hints: its running tasks, its cached RDD blocks
 * and whether live shuffle map outputs sit on it.
 *
 * <p>Tasks and cached blocks come from Spark's status store (as the UI shows them); shuffle outputs from
 * the driver's map-output tracker, which forgets a shuffle's outputs when the shuffle is cleaned up, so an
 * executor is released as soon as no stage can need its shuffle files any more.
 */
final class ExecutorActivity {
    private ExecutorActivity() {
    }

    /** A JSON object: executor id to {@code {"tasks": n, "rddBlocks": n, "shuffle": true|false}}. */
    static String json(SparkContext sc) {
        TreeSet<String> withShuffle = shuffleHolders(sc.env().mapOutputTracker());
        Map<String, String> out = new LinkedHashMap<>();
        for (ExecutorSummary e : CollectionConverters.asJava(sc.statusStore().executorList(true))) {
            if ("driver".equals(e.id())) {
                continue;
            }
            Map<String, String> facts = new LinkedHashMap<>();
            facts.put("tasks", Integer.toString(e.activeTasks()));
            facts.put("rddBlocks", Integer.toString(e.rddBlocks()));
            facts.put("shuffle", Boolean.toString(withShuffle.contains(e.id())));
            out.put(e.id(), Json.object(facts));
        }
        return Json.object(out);
    }

    private static TreeSet<String> shuffleHolders(MapOutputTracker tracker) {
        TreeSet<String> holders = new TreeSet<>();
        if (!(tracker instanceof MapOutputTrackerMaster)) {
            return holders;
        }
        MapOutputTrackerMaster master = (MapOutputTrackerMaster) tracker;
        for (ShuffleStatus status : CollectionConverters.asJava(master.shuffleStatuses()).values()) {
            // Under the shuffle's own lock, as Spark reads it: map outputs move when executors decommission.
            status.withMapStatuses((MapStatus[] statuses) -> {
                for (MapStatus s : statuses) {
                    if (s != null && s.location() != null) {
                        holders.add(s.location().executorId());
                    }
                }
                return null;
            });
        }
        return holders;
    }
}
