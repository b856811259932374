"""The Python side of the bridge without a JVM: callbacks, the driver adapter, profiles, master URLs."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from k8s_backend.conf.model import ResourceProfile, ResourceRequest
from k8s_backend.errors import ConfigError
from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.spark import bridge
from k8s_backend.spark.bridge import JvmDriverEndpoint, PythonBackendCallbacks
from k8s_backend.spark.master import MasterKind, is_pyk8s, parse_master
from k8s_backend.spark.profiles import parse_request

WAIT = 10.0


class RecordingBackend:
    """Hooks that record their calls; ``gate`` makes start() block until the test opens it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.cond = threading.Condition()
        self.fail: set[str] = set()

    def _record(self, name: str, arg: Any = None) -> None:
        with self.cond:
            self.calls.append((name, arg))
            self.cond.notify_all()
        if name in self.fail:
            raise RuntimeError(f"{name} failed")

    def wait_calls(self, n: int) -> list[tuple[str, Any]]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.calls) >= n, WAIT), self.calls
            return list(self.calls)

    def application_id(self) -> str:
        return "spark-app"

    def start(self) -> None:
        self.gate.wait(WAIT)
        self._record("start")

    def stop(self) -> None:
        self._record("stop")

    def register_resource_profile(self, profile: ResourceProfile) -> None:
        self._record("register", profile.id)

    def request_total_executors(self, targets: Mapping[int, int]) -> bool:
        self._record("request", dict(targets))
        return True

    def kill_executors(self, executor_ids: Sequence[str]) -> bool:
        self._record("kill", list(executor_ids))
        return True

    def decommission_executors(self, executor_ids: Sequence[str]) -> bool:
        self._record("decommission", list(executor_ids))
        return True

    def decommission_ended(self, executor_id: str, spark_reason: str) -> None:
        self._record("decommission ended", (executor_id, spark_reason))

    def is_executor_excluded(self, executor_id: str) -> bool:
        self._record("excluded", executor_id)
        return executor_id == "7"

    def sufficient_resources_registered(self) -> bool:
        self._record("sufficient")
        return True

    def generate_executor_id(self, pod_name: str) -> int:
        self._record("generate", pod_name)
        return 42


def profile_json(profile_id: int, **extra: Any) -> dict[str, Any]:
    desc: dict[str, Any] = {
        "id": profile_id,
        "cores": 2,
        "memoryMiB": 1024,
        "memoryOverheadMiB": 384,
        "memoryOffHeapMiB": 0,
        "pysparkMemoryMiB": 0,
        "totalMemoryMiB": 1408,
        "customResources": {},
        "executorRequests": {},
        "taskRequests": {"cpus": "1.0"},
    }
    desc.update(extra)
    return desc


def request(targets: dict[str, int], *profiles: dict[str, Any]) -> str:
    return json.dumps({"targets": targets, "profiles": list(profiles)})


@pytest.fixture
def backend() -> RecordingBackend:
    return RecordingBackend()


@pytest.fixture
def callbacks(backend: RecordingBackend) -> Any:
    cb = PythonBackendCallbacks(backend, stop_timeout=WAIT)
    yield cb
    cb.stop()


class TestCallbacks:
    def test_work_is_queued_and_callbacks_return_before_the_backend_runs_it(
        self, backend: RecordingBackend, callbacks: PythonBackendCallbacks
    ) -> None:
        backend.gate.clear()  # start() blocks: a callback that ran it inline would not return
        callbacks.start()
        callbacks.requestTotalExecutors(request({"0": 3}, profile_json(0)))
        callbacks.killExecutors('["4"]')
        assert backend.calls == []
        backend.gate.set()
        assert backend.wait_calls(3) == [("start", None), ("request", {0: 3}), ("kill", ["4"])]

    def test_custom_profiles_are_registered_once_and_before_their_targets(
        self, backend: RecordingBackend, callbacks: PythonBackendCallbacks
    ) -> None:
        callbacks.requestTotalExecutors(request({"0": 1, "1": 2}, profile_json(0), profile_json(1)))
        callbacks.requestTotalExecutors(request({"0": 1, "1": 3}, profile_json(0), profile_json(1)))
        assert backend.wait_calls(3) == [
            ("register", 1),
            ("request", {0: 1, 1: 2}),
            ("request", {0: 1, 1: 3}),
        ]

    def test_questions_are_answered_directly(
        self, backend: RecordingBackend, callbacks: PythonBackendCallbacks
    ) -> None:
        assert callbacks.isExecutorExcluded("7", "host") is True
        assert callbacks.isExecutorExcluded("8", "host") is False
        assert callbacks.sufficientResourcesRegistered() is True
        assert callbacks.applicationId() == "spark-app"
        assert callbacks.generateExecId("app-exec-0") == 42

    def test_a_failing_question_gets_a_safe_boolean_never_none(
        self, backend: RecordingBackend, callbacks: PythonBackendCallbacks
    ) -> None:
        backend.fail = {"excluded", "sufficient", "generate"}
        assert callbacks.isExecutorExcluded("1", "h") is False
        assert callbacks.sufficientResourcesRegistered() is False
        assert callbacks.generateExecId("p") == 0  # the JVM answers the executor with a failure

    def test_a_failing_hook_does_not_stop_the_ones_queued_after_it(
        self, backend: RecordingBackend, callbacks: PythonBackendCallbacks
    ) -> None:
        backend.fail = {"kill"}
        callbacks.killExecutors('["1"]')
        callbacks.requestTotalExecutors(request({"0": 2}))
        assert backend.wait_calls(2)[-1] == ("request", {0: 2})

    def test_executor_triggered_decommission_is_not_forwarded(
        self, backend: RecordingBackend, callbacks: PythonBackendCallbacks
    ) -> None:
        callbacks.decommissionExecutors('["1"]', True)
        callbacks.decommissionExecutors('["2", "3"]', False)
        assert backend.wait_calls(1) == [("decommission", ["2", "3"])]

    def test_a_decommissioning_executors_removal_reason_is_queued_in_order(
        self, backend: RecordingBackend, callbacks: PythonBackendCallbacks
    ) -> None:
        backend.gate.clear()  # the reason arrives on Spark's RPC thread: it must not wait for the backend
        callbacks.start()
        callbacks.decommissionExecutors('["1"]', False)
        callbacks.decommissionEnded("1", "Finished decommissioning")
        assert backend.calls == []
        backend.gate.set()
        assert backend.wait_calls(3) == [
            ("start", None),
            ("decommission", ["1"]),
            ("decommission ended", ("1", "Finished decommissioning")),
        ]

    def test_stop_waits_for_the_backend_then_cleans_up_and_ignores_later_work(
        self, backend: RecordingBackend
    ) -> None:
        cleaned: list[str] = []
        cb = PythonBackendCallbacks(
            backend, on_stopped=lambda: cleaned.append("local cluster"), stop_timeout=WAIT
        )
        cb.start()
        cb.stop()  # returns only once the backend stopped and cleanup ran
        assert [name for name, _ in backend.calls] == ["start", "stop"]
        assert cleaned == ["local cluster"]
        cb.requestTotalExecutors(request({"0": 5}))
        cb.stop()  # idempotent
        assert [name for name, _ in backend.calls] == ["start", "stop"]

    def test_cleanup_runs_even_when_the_backend_fails_to_stop(self, backend: RecordingBackend) -> None:
        backend.fail = {"stop"}
        cleaned: list[bool] = []
        cb = PythonBackendCallbacks(backend, on_stopped=lambda: cleaned.append(True), stop_timeout=WAIT)
        cb.stop()
        assert cleaned == [True]


class FakeJavaBackend:
    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.fail = fail

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any) -> Any:
            self.calls.append((name, *args))
            if self.fail:
                raise RuntimeError("py4j: connection refused")
            if name == "registeredExecutorsJson":
                return '{"1": 1700000000000, "2": 1700000000500}'
            return True

        return call


class TestJvmDriverEndpoint:
    def test_losses_carry_exit_code_and_explanation(self) -> None:
        java = FakeJavaBackend()
        driver = JvmDriverEndpoint(java)
        driver.remove_executor("3", ExecutorLoss(137, True, "OOMKilled: the container used 1 GiB"))
        assert java.calls == [("removeExecutorExited", "3", 137, True, "OOMKilled: the container used 1 GiB")]

    def test_executors_killed_by_the_driver_are_reported_as_killed(self) -> None:
        java = FakeJavaBackend()
        JvmDriverEndpoint(java).remove_executor("4", ExecutorLoss(-1, False, "x", killed_by_driver=True))
        assert java.calls == [("removeExecutorKilled", "4")]

    def test_registration_times_are_epoch_seconds(self) -> None:
        driver = JvmDriverEndpoint(FakeJavaBackend())
        assert driver.registered_executors() == {"1": 1700000000.0, "2": 1700000000.5}

    def test_disable_and_application_failure_reach_the_jvm(self) -> None:
        java = FakeJavaBackend()
        driver = JvmDriverEndpoint(java)
        driver.disable_executor("5")
        driver.application_failed("too many executor failures")
        assert java.calls == [("disableExecutorById", "5"), ("failApplication", "too many executor failures")]

    def test_a_decommission_on_notice_reaches_the_jvm_with_its_reason(self) -> None:
        java = FakeJavaBackend()
        JvmDriverEndpoint(java).decommission_executor("6", "k8s_backend: node n1 is cordoned")
        assert java.calls == [("decommissionExecutorByBackend", "6", "k8s_backend: node n1 is cordoned")]
        # The name Python calls is the JVM backend's public method (Py4J resolves it by name).
        java_source = Path(bridge.__file__).parent / "java/io/k8sbackend/bridge/PyK8sSchedulerBackend.java"
        declared = java_source.read_text(encoding="utf-8")
        assert "public boolean decommissionExecutorByBackend(String executorId, String reason)" in declared

    def test_jvm_errors_are_logged_not_raised(self) -> None:
        driver = JvmDriverEndpoint(FakeJavaBackend(fail=True))
        driver.decommission_executor("1", "x")
        driver.remove_executor("1", ExecutorLoss(1, True, "x"))
        driver.disable_executor("1")
        driver.application_failed("x")
        assert driver.registered_executors() == {}


class TestProfiles:
    def test_targets_and_profile_sizes(self) -> None:
        gpu = {"amount": 1, "discoveryScript": "/opt/gpu.sh", "vendor": "nvidia.com"}
        req = parse_request(
            request(
                {"0": 1, "2": 4},
                profile_json(0),
                profile_json(
                    2,
                    cores=4,
                    memoryMiB=2048,
                    memoryOffHeapMiB=100,
                    pysparkMemoryMiB=300,
                    customResources={"gpu": gpu},
                    executorRequests={"cores": {"amount": 4}, "memory": {"amount": 2048}, "gpu": gpu},
                    taskRequests={"cpus": "2.0", "gpu": "1.0"},
                ),
            )
        )
        assert req.targets == {0: 1, 2: 4}
        (custom,) = req.custom_profiles()
        assert custom == ResourceProfile(
            id=2,
            cores=4,
            memory_mib=2048,
            memory_overhead_mib=None,
            offheap_mib=100,
            pyspark_memory_mib=300,
            custom_resources=(ResourceRequest("gpu", 1, "nvidia.com", "/opt/gpu.sh"),),
            task_cpus=2,
        )

    def test_explicit_overhead_from_the_profile_is_kept(self) -> None:
        desc = profile_json(1, executorRequests={"memoryOverhead": {"amount": 700}}, memoryOverheadMiB=700)
        assert parse_request(request({"1": 1}, desc)).profiles[0].memory_overhead_mib == 700

    def test_explicit_overhead_from_the_conf_is_kept(self) -> None:
        desc = profile_json(1, memoryOverheadMiB=512)
        conf = {"spark.executor.memoryOverhead": "512m"}
        assert parse_request(request({"1": 1}, desc), conf).profiles[0].memory_overhead_mib == 512

    def test_a_computed_overhead_is_left_to_the_pod_builder(self) -> None:
        assert parse_request(request({"1": 1}, profile_json(1))).profiles[0].memory_overhead_mib is None

    def test_unset_cores_default_to_one(self) -> None:
        assert parse_request(request({"1": 1}, profile_json(1, cores=None))).profiles[0].cores == 1


class TestMasterUrls:
    @pytest.mark.parametrize(
        ("url", "kind", "server"),
        [
            ("pyk8s://https://10.0.0.1:6443", MasterKind.API_SERVER, "https://10.0.0.1:6443"),
            ("pyk8s://http://127.0.0.1:8080/", MasterKind.API_SERVER, "http://127.0.0.1:8080"),
            ("pyk8s://kube.example.com:443", MasterKind.API_SERVER, "https://kube.example.com:443"),
            ("pyk8s://", MasterKind.DEFAULT, ""),
            ("pyk8s://local", MasterKind.LOCAL, ""),
        ],
    )
    def test_forms(self, url: str, kind: MasterKind, server: str) -> None:
        parsed = parse_master(url)
        assert (parsed.kind, parsed.api_server) == (kind, server)

    def test_what_the_backend_reads(self) -> None:
        assert parse_master("pyk8s://https://h:6443").backend_master() == "k8s://https://h:6443"
        assert parse_master("pyk8s://").backend_master() is None
        assert (
            parse_master("pyk8s://local").backend_master("http://127.0.0.1:9") == "k8s://http://127.0.0.1:9"
        )

    @pytest.mark.parametrize("url", ["k8s://https://h:1", "pyk8s://ftp://h", "pyk8s://https://h:99999"])
    def test_bad_urls_name_the_key_value_and_forms(self, url: str) -> None:
        with pytest.raises(ConfigError) as info:
            parse_master(url)
        assert info.value.key == "spark.master"
        assert url in str(info.value) and "pyk8s://local" in str(info.value)

    def test_is_pyk8s(self) -> None:
        assert is_pyk8s("pyk8s://local")
        assert not is_pyk8s("local[2]")
        assert not is_pyk8s(None)
