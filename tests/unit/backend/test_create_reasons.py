"""Every executor pod create is in the executor's history with why the allocator decided it (issue 22)."""

from __future__ import annotations

from backend_harness import make_harness

from k8s_backend.kube.port import PODS


def test_each_create_says_why_in_the_executor_history() -> None:
    h = make_harness({"spark.executor.instances": "3"})
    h.backend.start()
    h.run()
    lines = h.backend.parts.monitor.describe_all()
    assert len(lines) == 3
    assert all(
        "created for target 3 of profile 0: 0 counted (running, pending or requested), 3 requested this round"
        in line
        for line in lines
    ), lines


def test_a_create_asked_again_under_the_same_id_says_so() -> None:
    h = make_harness({"spark.executor.instances": "1"})
    h.fake.fail_next("create", PODS, status=503)
    h.backend.start()
    h.run(2.0)
    [line] = h.backend.parts.monitor.describe_all()
    assert line.startswith("requested ")
    assert "the same id asked again after a transient create error" in line


def test_a_pod_the_watch_shows_before_its_create_returns_still_gets_its_reason() -> None:
    h = make_harness({"spark.executor.instances": "1"})
    h.backend.start()
    h.run()
    tracker = h.backend.parts.monitor
    # The watch made the record first in a race; the create's answer completes it.
    tracker.requested(7, 0)
    tracker.requested(7, 0, "created for a reason")
    assert "created for a reason" in tracker.describe(7)
