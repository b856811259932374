"""The driver's executor summaries across the bridge: the JVM's JSON read into ExecutorSummary values, and
a JVM that cannot answer gives an empty list (the roller then skips), never an error."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from k8s_backend.lifecycle.roll_policy import ExecutorSummary
from k8s_backend.spark.bridge import JvmDriverEndpoint, summaries_from_json

ONE = {
    "id": "7",
    "addTime": 1_767_225_600_000,
    "totalTasks": 12,
    "failedTasks": 1,
    "totalDuration": 3400,
    "totalGCTime": 120,
    "totalShuffleWrite": 2048,
    "diskUsed": 10,
    "peakJVMHeapMemory": 512,
    "peakJVMOffHeapMemory": 64,
}


def test_the_jvm_json_becomes_executor_summaries() -> None:
    assert summaries_from_json(json.dumps([ONE])) == [
        ExecutorSummary(
            id="7",
            add_time=datetime(2026, 1, 1, tzinfo=timezone.utc),
            total_tasks=12,
            failed_tasks=1,
            total_duration=3400,
            total_gc_time=120,
            total_shuffle_write=2048,
            disk_used=10,
            peak_jvm_heap_memory=512,
            peak_jvm_off_heap_memory=64,
        )
    ]


class Jvm:
    def __init__(self, answer: str | None) -> None:
        self.answer = answer

    def executorSummariesJson(self) -> str:
        if self.answer is None:
            raise RuntimeError("the JVM is gone")
        return self.answer


def test_the_endpoint_reads_the_jvm_s_summaries() -> None:
    endpoint = JvmDriverEndpoint(Jvm(json.dumps([ONE, {**ONE, "id": "driver"}])))
    assert [s.id for s in endpoint.executor_summaries()] == ["7", "driver"]


def test_a_jvm_that_cannot_answer_gives_no_summaries_and_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    assert JvmDriverEndpoint(Jvm(None)).executor_summaries() == []
    assert "Could not read Spark's executor summaries" in caplog.text
