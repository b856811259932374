"""The executor roller on a fake driver port, a manual clock and a deterministic scheduler: one roll per
interval through the driver's graceful decommission, none while the last one is still leaving or its
replacement has not registered, each roll and skip in status()."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

import pytest

from k8s_backend.lifecycle.driver_port import ExecutorLoss
from k8s_backend.lifecycle.roll_policy import ExecutorSummary, RollPolicy
from k8s_backend.lifecycle.roller import ExecutorRoller, RollSettings
from k8s_backend.testing import DeterministicScheduler, ManualClock

T0 = datetime(2026, 1, 1)


class FakeDriver:
    """The driver port with executor summaries the test sets; decommissions are recorded."""

    def __init__(self, *ids: str) -> None:
        self.summaries = {i: ExecutorSummary(id=i, add_time=T0, total_tasks=int(i)) for i in ids}
        self.decommissioned: list[tuple[str, str]] = []

    def executor_summaries(self) -> Sequence[ExecutorSummary]:
        return list(self.summaries.values())

    def decommission_executor(self, executor_id: str, reason: str) -> None:
        self.decommissioned.append((executor_id, reason))

    def remove_executor(self, executor_id: str, loss: ExecutorLoss) -> None:
        raise AssertionError("the roller never removes")

    def registered_executors(self) -> dict[str, float]:
        return dict.fromkeys(self.summaries, 0.0)

    def application_failed(self, reason: str) -> None:
        raise AssertionError(reason)


class Events:
    def __init__(self) -> None:
        self.decommissioning_ids: list[str] = []

    def decommissioning(self, executor_ids: Sequence[str]) -> None:
        self.decommissioning_ids += executor_ids

    def __getattr__(self, name: str) -> object:
        return lambda *args, **kwargs: None


def make(driver: FakeDriver, target: int = 3) -> tuple[ExecutorRoller, DeterministicScheduler, list[str]]:
    clock = ManualClock(1_700_000_000.0)
    scheduler = DeterministicScheduler(clock)
    labelled: list[str] = []
    roller = ExecutorRoller(
        scheduler,
        clock,
        settings=RollSettings(10.0, RollPolicy.ID, min_tasks=0),
        driver=driver,
        target=lambda: target,
        events=Events(),
        label=labelled.extend,
    )
    return roller, scheduler, labelled


def test_one_executor_is_rolled_per_interval_through_the_driver_and_labelled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    driver = FakeDriver("1", "2", "3")
    roller, scheduler, labelled = make(driver)
    caplog.set_level(logging.INFO, logger="k8s_backend.lifecycle.roller")
    roller.start()
    scheduler.advance(9.0)
    assert driver.decommissioned == []
    scheduler.advance(1.0)
    assert [i for i, _ in driver.decommissioned] == ["1"]
    assert driver.decommissioned[0][1].startswith("Rolling via ID at 2023-11-14T22:13:30")
    assert labelled == ["1"]
    assert "Rolling executor 1 (policy ID: chosen by policy ID among 3 candidate executors)" in caplog.text


def test_no_roll_while_the_rolled_executor_leaves_nor_before_its_replacement_registers() -> None:
    driver = FakeDriver("1", "2", "3")
    roller, scheduler, _ = make(driver)
    roller.start()
    scheduler.advance(10.0)
    scheduler.advance(10.0)  # 1 is still listed: decommissioning
    assert [i for i, _ in driver.decommissioned] == ["1"]
    assert roller.status()["decommissioning"] == ["1"]
    del driver.summaries["1"]
    scheduler.advance(10.0)  # 2 alive, target 3: the replacement has not registered
    assert len(driver.decommissioned) == 1
    driver.summaries["4"] = ExecutorSummary(id="4", add_time=T0)
    scheduler.advance(10.0)
    assert [i for i, _ in driver.decommissioned] == ["1", "2"]
    status = roller.status()
    assert status["rolls"] == 2 and status["policy"] == "ID" and status["interval"] == 10.0
    assert [r["executor_id"] for r in status["recent_rolls"]] == ["1", "2"]
    reasons = [s["reason"] for s in status["recent_skips"]]
    assert reasons[0].startswith("executor 1 is still decommissioning")
    assert reasons[1].startswith("2 executors alive, fewer than the target of 3")


def test_stop_cancels_the_next_look() -> None:
    driver = FakeDriver("1", "2", "3")
    roller, scheduler, _ = make(driver)
    roller.start()
    roller.stop()
    scheduler.advance(60.0)
    assert driver.decommissioned == []


def test_a_driver_that_lists_nothing_does_not_make_the_roller_forget_its_roll() -> None:
    driver = FakeDriver("1", "2", "3")
    roller, scheduler, _ = make(driver, target=0)
    roller.start()
    scheduler.advance(10.0)
    saved, driver.summaries = driver.summaries, {}
    scheduler.advance(10.0)
    driver.summaries = saved
    scheduler.advance(10.0)
    assert [i for i, _ in driver.decommissioned] == ["1"], "1 is still leaving: not rolled twice"
