"""Every simple key: its default, a value it reads into its field, and its check with a bad value."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from k8s_backend.conf import keys
from k8s_backend.conf.model import KubernetesConf
from k8s_backend.conf.spec import Use
from k8s_backend.errors import ConfigError


def parse(props: dict[str, str]) -> KubernetesConf:
    return KubernetesConf.from_spark_conf(props)


def field_value(conf: KubernetesConf, path: str) -> Any:
    value: Any = conf
    for part in path.split("."):
        value = getattr(value, part)
    return value


# key -> (raw value, value expected in the key's field)
READS: dict[str, tuple[str, Any]] = {
    "spark.kubernetes.namespace": ("spark-jobs", "spark-jobs"),
    "spark.app.name": ("My App", "My App"),
    "spark.app.id": ("spark-0123", "spark-0123"),
    "spark.kubernetes.container.image.pullPolicy": ("Always", "Always"),
    "spark.kubernetes.container.image.pullSecrets": ("a, b", ("a", "b")),
    "spark.kubernetes.executor.podNamePrefix": ("my-app-1", "my-app-1"),
    "spark.kubernetes.executor.podTemplateFile": ("/t.yaml", "/t.yaml"),
    "spark.kubernetes.executor.podTemplateContainerName": ("main", "main"),
    "spark.kubernetes.authenticate.executor.serviceAccountName": ("exec-sa", "exec-sa"),
    "spark.kubernetes.executor.scheduler.name": ("volcano", "volcano"),
    "spark.local.dir": ("/a, /b", ("/a", "/b")),
    "spark.kubernetes.local.dirs.tmpfs": ("true", True),
    "spark.blockManager.port": ("0", 0),
    "spark.executor.extraClassPath": ("/x.jar", "/x.jar"),
    "spark.decommission.enabled": ("true", True),
    "spark.kubernetes.decommission.script": ("/d.sh", "/d.sh"),
    "spark.kubernetes.executor.pod.featureSteps": ("a.B,c.D", ("a.B", "c.D")),
    "spark.kubernetes.executor.pod.excludedFeatureSteps": ("a.B", ("a.B",)),
    "spark.kubernetes.executor.disableConfigMap": ("true", True),
    "spark.kubernetes.configMap.maxSize": ("1000", 1000),
    "spark.kubernetes.executor.useDriverPodIP": ("false", False),
    "spark.kubernetes.legacy.useReadWriteOnceAccessMode": ("true", True),
    "spark.kubernetes.executor.terminationGracePeriodSeconds": ("1min", 60.0),
    "spark.kubernetes.executor.securityContext.allowPrivilegeEscalation": ("true", True),
    "spark.kubernetes.executor.hadoopConfigMapName": ("hadoop-conf", "hadoop-conf"),
    "spark.executor.memory": ("4g", 4096),
    "spark.executor.memoryOverhead": ("512", 512),
    "spark.executor.memoryOverheadFactor": ("0.4", 0.4),
    "spark.executor.minMemoryOverhead": ("1g", 1024),
    "spark.executor.pyspark.memory": ("256m", 256),
    "spark.executor.cores": ("4", 4),
    "spark.task.cpus": ("0.5", 0.5),
    "spark.kubernetes.executor.request.cores": ("0.5", "500m"),
    "spark.kubernetes.executor.limit.cores": ("2000m", "2"),
    "spark.kubernetes.allocation.pods.allocator": ("statefulset", "statefulset"),
    "spark.kubernetes.allocation.batch.size": ("3", 3),
    "spark.kubernetes.allocation.batch.delay": ("500", 0.5),
    "spark.kubernetes.allocation.maxPendingPods": ("10", 10),
    "spark.kubernetes.allocation.maxPendingPodsPerRp": ("5", 5),
    "spark.kubernetes.allocation.maximum": ("100", 100),
    "spark.kubernetes.allocation.batch.adaptive": ("true", True),
    "spark.kubernetes.allocation.batch.concurrency": ("4", 4),
    "spark.kubernetes.executor.rollInterval": ("30", 30.0),
    "spark.kubernetes.executor.rollPolicy": ("failed_tasks", "FAILED_TASKS"),
    "spark.kubernetes.executor.minTasksPerExecutorBeforeRolling": ("2", 2),
    "spark.kubernetes.executor.rollPolicyHook": ("pkg.rolling:pick", "pkg.rolling:pick"),
    "spark.kubernetes.allocation.executor.timeout": ("2min", 120.0),
    "spark.kubernetes.allocation.driver.readinessTimeout": ("5", 5.0),
    "spark.kubernetes.executor.enableApiWatcher": ("false", False),
    "spark.kubernetes.executor.watch.streamingList": ("false", False),
    "spark.kubernetes.executor.enableApiPolling": ("false", False),
    "spark.kubernetes.executor.apiPollingInterval": ("10s", 10.0),
    "spark.kubernetes.executor.enablePollingWithResourceVersion": ("true", True),
    "spark.kubernetes.executor.eventProcessingInterval": ("250ms", 0.25),
    "spark.kubernetes.executor.missingPodDetectDelta": ("1min", 60.0),
    "spark.kubernetes.executor.checkAllContainers": ("false", False),
    "spark.kubernetes.executorSnapshotsSubscribersShutdownGracePeriod": ("3", 3.0),
    "spark.kubernetes.executor.deleteOnTermination": ("false", False),
    "spark.kubernetes.executor.decommissionLabel": ("example.com/leaving", "example.com/leaving"),
    "spark.kubernetes.executor.decommissionLabelValue": ("yes", "yes"),
    "spark.kubernetes.dynamicAllocation.deleteGracePeriod": ("0", 0.0),
    "spark.kubernetes.executor.disruption.decommissionOnNotice": ("false", False),
    "spark.kubernetes.executor.disruption.nodeTaints": (
        "example.com/draining, ToBeDeletedByClusterAutoscaler",
        ("example.com/draining", "ToBeDeletedByClusterAutoscaler"),
    ),
    "spark.kubernetes.executor.disruption.nodeCheckInterval": ("2500ms", 2.5),
    "spark.kubernetes.executor.oom.overheadFactor": ("1.5", 1.5),
    "spark.kubernetes.allocation.quotaAware": ("false", False),
    "spark.kubernetes.executor.autoscalerHints.enabled": ("true", True),
    "spark.kubernetes.executor.autoscalerHints.interval": ("10s", 10.0),
    "spark.kubernetes.executor.autoscalerHints.deletionCost": ("-5", -5),
    "spark.kubernetes.executor.nodeFailures.threshold": ("3", 3),
    "spark.kubernetes.executor.nodeFailures.window": ("5min", 300.0),
    "spark.kubernetes.executor.oom.maxOverheadFactor": ("3", 3.0),
    "spark.kubernetes.executor.deletedExecutorsCacheTimeout": ("10min", 600.0),
    "spark.executor.failuresValidityInterval": ("1h", 3600.0),
    "spark.executor.instances": ("5", 5),
    "spark.dynamicAllocation.enabled": ("true", True),
    "spark.dynamicAllocation.minExecutors": ("1", 1),
    "spark.dynamicAllocation.maxExecutors": ("9", 9),
    "spark.dynamicAllocation.executorIdleTimeout": ("30", 30.0),
    "spark.scheduler.minRegisteredResourcesRatio": ("1", 1.0),
    "spark.kubernetes.driver.pod.name": ("driver-0", "driver-0"),
    "spark.driver.host": ("10.0.0.1", "10.0.0.1"),
    "spark.driver.port": ("7077", 7077),
    "spark.kubernetes.driver.ownPersistentVolumeClaim": ("false", False),
    "spark.kubernetes.driver.reusePersistentVolumeClaim": ("false", False),
    "spark.kubernetes.driver.waitToReusePersistentVolumeClaim": ("true", True),
    "spark.kubernetes.driver.service.deleteOnTermination": ("false", False),
    "spark.kubernetes.authenticate.driver.serviceAccountName": ("spark", "spark"),
    "spark.kubernetes.driver.heartbeat.enabled": ("false", False),
    "spark.kubernetes.driver.heartbeat.leaseDuration": ("2min", 120.0),
    "spark.kubernetes.context": ("kind-kind", "kind-kind"),
    "spark.kubernetes.kubeconfig": ("/home/me/.kube/prod", "/home/me/.kube/prod"),
    "spark.kubernetes.report.timeline": ("/tmp/timeline.html", "/tmp/timeline.html"),
    "spark.kubernetes.client.qps": ("50", 50.0),
    "spark.kubernetes.client.burst": ("100", 100),
    "spark.kubernetes.trust.certificates": ("true", True),
    "spark.kubernetes.driver.requestTimeout": ("2500", 2.5),
    "spark.kubernetes.driver.connectionTimeout": ("3s", 3.0),
    "spark.kubernetes.gang.enabled": ("true", True),
    "spark.kubernetes.gang.minExecutors": ("4", 4),
    "spark.kubernetes.gang.timeout": ("2min", 120.0),
    "spark.kubernetes.gang.style": ("Hard", "Hard"),
    "spark.kubernetes.yunikorn.enabled": ("true", True),
    "spark.kubernetes.yunikorn.queue": ("root.spark", "root.spark"),
    "spark.kubernetes.yunikorn.taskGroupName": ("execs", "execs"),
    "spark.kubernetes.volcano.queue": ("batch", "batch"),
    "spark.kubernetes.volcano.priorityClassName": ("high", "high"),
    "spark.kubernetes.scheduler.volcano.podGroupTemplateFile": ("/pg.yaml", "/pg.yaml"),
    "spark.kubernetes.executor.stuckTimeout": ("90", 90.0),
    "spark.kubernetes.executor.imagePullFailTimeout": ("0", 0.0),
    "spark.kubernetes.recovery.policy": ("delete", "delete"),
    "spark.kubernetes.executor.stopExitWait": ("5s", 5.0),
    "spark.kubernetes.stopTimeout": ("2min", 120.0),
    "spark.kubernetes.metrics.port": ("9090", 9090),
    "spark.kubernetes.metrics.host": ("0.0.0.0", "0.0.0.0"),
    "spark.kubernetes.progress.interval": ("250ms", 0.25),
}

# The roll keys act (and are accepted) only with Spark's roll plugin listed and a positive interval.
_ROLLING = {
    "spark.plugins": "org.apache.spark.scheduler.cluster.k8s.ExecutorRollPlugin",
    "spark.decommission.enabled": "true",
    "spark.kubernetes.executor.rollInterval": "1min",
}
WITH_KEY_ACTING: dict[str, dict[str, str]] = {
    name: _ROLLING for name in READS if name.startswith("spark.kubernetes.executor.roll")
}
WITH_KEY_ACTING["spark.kubernetes.executor.minTasksPerExecutorBeforeRolling"] = _ROLLING

GENERIC = [r for r in keys.KEYS if r.field and not r.custom and not r.is_prefix and r.use is Use.READ]


def test_every_generic_key_has_a_read_case() -> None:
    assert {r.name for r in GENERIC} == set(READS)


@pytest.mark.parametrize("name", sorted(READS))
def test_key_fills_its_field(name: str) -> None:
    raw, expected = READS[name]
    conf = parse({**WITH_KEY_ACTING.get(name, {}), name: raw})
    assert field_value(conf, keys.key(name).field or "") == expected


def test_defaults_of_an_empty_configuration() -> None:
    defaults = KubernetesConf()
    # Spark's failure limit without spark.executor.instances is max(3, 2 x 0) = 3.
    expected = attrs.evolve(defaults, lifecycle=attrs.evolve(defaults.lifecycle, max_executor_failures=3))
    assert parse({}) == expected


# key -> (bad value, text the message must contain after "<key>=<value> is ")
BAD: dict[str, tuple[str, str]] = {
    "spark.kubernetes.namespace": ("Spark_Jobs", "invalid: must be a DNS-1123 label"),
    "spark.app.id": ("", "invalid: must not be empty"),
    "spark.kubernetes.container.image": ("", "invalid: must not be empty"),
    "spark.kubernetes.executor.container.image": ("", "invalid: must not be empty"),
    "spark.kubernetes.container.image.pullPolicy": (
        "always",
        "invalid: must be one of Always, Never, IfNotPresent",
    ),
    "spark.kubernetes.container.image.pullSecrets": (
        "ok, Not_OK",
        "invalid: 'Not_OK' must be a DNS-1123 subdomain",
    ),
    "spark.kubernetes.executor.podNamePrefix": ("My-App", "invalid: must be a DNS-1123 subdomain"),
    "spark.kubernetes.executor.podTemplateFile": ("", "invalid: must be a file path, not empty"),
    "spark.kubernetes.executor.podTemplateContainerName": ("Main", "invalid: must be a DNS-1123 label"),
    "spark.kubernetes.authenticate.executor.serviceAccountName": (
        "Exec SA",
        "invalid: must be a DNS-1123 subdomain",
    ),
    "spark.kubernetes.scheduler.name": ("", "invalid: must not be empty"),
    "spark.kubernetes.executor.scheduler.name": ("", "invalid: must not be empty"),
    "spark.blockManager.port": ("80", "invalid: must be 0 or in 1024-65535"),
    "spark.kubernetes.decommission.script": ("", "invalid: must not be empty"),
    "spark.kubernetes.configMap.maxSize": ("1048577", "invalid: must be between 0 and 1048576 bytes"),
    "spark.kubernetes.executor.terminationGracePeriodSeconds": ("-1", "invalid: must be 0 or more"),
    "spark.kubernetes.executor.hadoopConfigMapName": ("Hadoop", "invalid: must be a DNS-1123 subdomain"),
    "spark.executor.memory": ("0", "invalid: must be greater than 0"),
    "spark.executor.memoryOverhead": ("-1", "invalid: must be 0 or more"),
    "spark.executor.memoryOverheadFactor": ("0", "invalid: must be a number greater than 0"),
    "spark.kubernetes.memoryOverheadFactor": ("-0.1", "invalid: must be 0 or more"),
    "spark.executor.minMemoryOverhead": ("-1", "invalid: must be 0 or more"),
    "spark.executor.pyspark.memory": ("-1", "invalid: must be 0 or more"),
    "spark.memory.offHeap.size": ("-1", "invalid: must be 0 or more"),
    "spark.executor.cores": ("0", "invalid: must be a positive integer (> 0)"),
    "spark.task.cpus": ("0", "invalid: must be a positive value between 1E-9 and 2147483647"),
    "spark.kubernetes.allocation.pods.allocator": ("replicaset", "invalid: must be direct, statefulset or"),
    "spark.kubernetes.allocation.batch.size": ("0", "invalid: must be a positive integer (> 0)"),
    "spark.kubernetes.executor.rollInterval": ("-5", "invalid: must be 0 (off) or a positive time value"),
    "spark.kubernetes.executor.rollPolicy": ("BIGGEST", "invalid: must be one of ID, ADD_TIME"),
    "spark.kubernetes.executor.minTasksPerExecutorBeforeRolling": ("-1", "invalid: must be 0 or more"),
    "spark.kubernetes.executor.rollPolicyHook": ("pkg.rolling", "invalid: must be `module:function`"),
    "spark.kubernetes.allocation.batch.delay": ("100ms", "invalid: must be greater than 0.1s"),
    "spark.kubernetes.allocation.maxPendingPods": ("0", "invalid: must be a positive integer (> 0)"),
    "spark.kubernetes.allocation.maxPendingPodsPerRp": ("-1", "invalid: must be a positive integer (> 0)"),
    "spark.kubernetes.allocation.maximum": ("0", "invalid: must be a positive integer (> 0)"),
    "spark.kubernetes.allocation.executor.timeout": ("0", "invalid: must be a positive time value"),
    "spark.kubernetes.allocation.driver.readinessTimeout": (
        "500ms",
        "invalid: must be a positive time value, counted in whole seconds",
    ),
    "spark.kubernetes.executor.apiPollingInterval": ("0", "invalid: must be a positive time value"),
    "spark.kubernetes.executor.eventProcessingInterval": ("0s", "invalid: must be a positive time value"),
    "spark.kubernetes.executor.missingPodDetectDelta": ("-1s", "invalid: must be a positive time value"),
    "spark.kubernetes.executorSnapshotsSubscribersShutdownGracePeriod": (
        "1ms",
        "invalid: must be a positive time",
    ),
    "spark.kubernetes.executor.decommissionLabel": ("bad key!", "invalid: must have a name of letters"),
    "spark.kubernetes.executor.decommissionLabelValue": ("-x", "invalid: must be letters, digits"),
    "spark.kubernetes.dynamicAllocation.deleteGracePeriod": ("-1s", "invalid: must be 0 or more"),
    "spark.kubernetes.executor.disruption.nodeTaints": (
        "a,bad key!",
        "invalid: 'bad key!' must have a name of letters",
    ),
    "spark.kubernetes.executor.disruption.nodeCheckInterval": ("0", "invalid: must be a positive time"),
    "spark.kubernetes.executor.oom.overheadFactor": ("0.5", "invalid: must be between 1.0 (off) and 10.0"),
    "spark.kubernetes.executor.autoscalerHints.interval": ("0", "invalid: must be a positive time"),
    "spark.kubernetes.executor.nodeFailures.threshold": ("-1", "invalid: must be 0 (off) or more"),
    "spark.kubernetes.executor.nodeFailures.window": ("0", "invalid: must be a positive time"),
    "spark.kubernetes.executor.oom.maxOverheadFactor": ("0.9", "invalid: must be between 1.0 and 100.0"),
    "spark.kubernetes.executor.deletedExecutorsCacheTimeout": ("-1", "invalid: must be 0 or more"),
    "spark.executor.maxNumFailures": ("0", "invalid: must be a positive integer (> 0)"),
    "spark.executor.failuresValidityInterval": ("-1", "invalid: must be 0 or more"),
    "spark.executor.instances": ("-1", "invalid: must be 0 or more"),
    "spark.dynamicAllocation.executorIdleTimeout": ("-1", "invalid: must be 0 or more"),
    "spark.scheduler.minRegisteredResourcesRatio": ("1.5", "invalid: must be between 0 and 1"),
    "spark.kubernetes.driver.pod.name": ("Driver", "invalid: must be a DNS-1123 subdomain"),
    "spark.driver.port": ("65536", "invalid: must be between 0 and 65535"),
    "spark.kubernetes.authenticate.driver.serviceAccountName": (
        "a_b",
        "invalid: must be a DNS-1123 subdomain",
    ),
    "spark.kubernetes.context": ("", "invalid: must not be empty"),
    "spark.kubernetes.kubeconfig": ("", "invalid: must not be empty"),
    "spark.kubernetes.report.timeline": ("", "invalid: must not be empty"),
    "spark.kubernetes.client.qps": ("-1", "invalid: must be 0 (no limit) or a positive number"),
    "spark.kubernetes.allocation.batch.concurrency": ("-1", "invalid: must be 0 (automatic) or a positive"),
    "spark.kubernetes.client.burst": ("0", "invalid: must be at least 1"),
    "spark.kubernetes.driver.heartbeat.leaseDuration": ("2s", "invalid: must be at least 3s"),
    "spark.kubernetes.driver.requestTimeout": ("0", "invalid: must be a positive time value"),
    "spark.kubernetes.driver.connectionTimeout": ("-5", "invalid: must be a positive time value"),
    **{
        row.name: ("", "invalid: must not be empty")
        for row in keys.KEYS
        if row.name.startswith("spark.kubernetes.authenticate.")
        and row.field
        and row.field.startswith("api.")
    },
    "spark.kubernetes.gang.minExecutors": ("0", "invalid: must be a positive integer"),
    "spark.kubernetes.gang.timeout": ("0s", "invalid: must be a positive duration"),
    "spark.kubernetes.gang.style": ("hard", "invalid: must be one of Soft, Hard"),
    "spark.kubernetes.yunikorn.queue": ("root a", "invalid: must be letters, digits"),
    "spark.kubernetes.yunikorn.taskGroupName": ("Bad_Name", "invalid: must be a DNS-1123 label"),
    "spark.kubernetes.executor.stuckTimeout": ("0", "invalid: must be a positive duration"),
    "spark.kubernetes.executor.imagePullFailTimeout": ("-1s", "invalid: must be 0 (disabled) or a positive"),
    "spark.kubernetes.recovery.policy": ("keep", "invalid: must be one of adopt, delete"),
    "spark.kubernetes.executor.stopExitWait": ("-1s", "invalid: must be 0 (delete at once)"),
    "spark.kubernetes.stopTimeout": ("0", "invalid: must be a positive duration"),
    "spark.kubernetes.metrics.port": ("65536", "invalid: must be a TCP port from 1 to 65535, or 0 (off)"),
    "spark.kubernetes.metrics.host": ("", "invalid: must not be empty"),
    "spark.kubernetes.progress.interval": ("-1s", "invalid: must be 0 (off) or more"),
}


def test_every_check_has_a_bad_value_case() -> None:
    checked = {r.name for r in keys.KEYS if r.check is not None and r.use is Use.READ}
    assert checked == set(BAD)


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_value_is_refused_naming_key_value_and_rule(name: str) -> None:
    raw, fragment = BAD[name]
    with pytest.raises(ConfigError) as caught:
        parse({name: raw})
    assert str(caught.value).startswith(f"{name}={raw} is {fragment}")
    assert caught.value.key == name
    assert caught.value.value == raw


@pytest.mark.parametrize(
    ("name", "raw", "fragment"),
    [
        ("spark.kubernetes.allocation.batch.size", "many", "is not an integer"),
        ("spark.kubernetes.executor.deleteOnTermination", "yes", "is not a boolean: use true or false"),
        ("spark.executor.memory", "lots", "is not a size: use a whole number with a unit such as 512m or 4g"),
        ("spark.kubernetes.allocation.batch.delay", "1 second", "is not a duration"),
        ("spark.executor.memoryOverheadFactor", "ten percent", "is not a number"),
        ("spark.kubernetes.executor.request.cores", "two", "is not a Kubernetes CPU quantity"),
    ],
)
def test_unparsable_values_name_the_type(name: str, raw: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{name}={raw} {fragment}"):
        parse({name: raw})


def test_keys_overridden_by_others_are_still_checked() -> None:
    # The legacy factor is not used when the executor one is set, but a bad value is still an error.
    with pytest.raises(ConfigError, match=r"^spark.kubernetes.memoryOverheadFactor=-1 is invalid"):
        parse({"spark.executor.memoryOverheadFactor": "0.2", "spark.kubernetes.memoryOverheadFactor": "-1"})


def test_passed_through_keys_are_not_checked() -> None:
    conf = parse({"spark.kubernetes.submission.waitAppCompletion": "maybe"})
    assert conf.get("spark.kubernetes.submission.waitAppCompletion") == "maybe"


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        (
            {"spark.executor.defaultJavaOptions": "-Da=1", "spark.executor.extraJavaOptions": "-Db=2"},
            "-Da=1 -Db=2",
        ),
        ({"spark.executor.defaultJavaOptions": "-Da=1"}, "-Da=1"),
        ({"spark.executor.extraJavaOptions": "-Db=2"}, "-Db=2"),
        ({"spark.executor.defaultJavaOptions": "", "spark.executor.extraJavaOptions": "-Db=2"}, "-Db=2"),
        ({}, ""),
    ],
)
def test_default_java_options_are_prepended_to_extra_java_options(
    props: dict[str, str], expected: str
) -> None:
    # Spark's EXECUTOR_JAVA_OPTIONS is declared with withPrepended(EXECUTOR_DEFAULT_JAVA_OPTIONS): the
    # administrator's defaults come first, then the user's options, joined by one space.
    assert parse(props).executor.extra_java_options == expected
