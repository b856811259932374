"""Executor rolling through the whole backend on the in-memory API, a manual clock and a deterministic
scheduler: the roller decommissions one executor per rollInterval through the driver, keeps the target so
a replacement comes, shows itself in status(), stops first; its policy comes from Spark's key, from
rollPolicyHook or from create(roll_policy=...), and every way it could not act is a ConfigError."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import pytest
from backend_harness import APP_ID, BASE_CONF, DRIVER_URL, Harness, RecordingDriver, make_harness

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.conf.keys_roll import HOOK_KEY, INTERVAL_KEY, POLICY_KEY, ROLL_PLUGIN
from k8s_backend.errors import ConfigError
from k8s_backend.lifecycle.roll_policy import ExecutorSummary
from k8s_backend.testing import FakeKubernetes

ROLLING = {
    "spark.plugins": ROLL_PLUGIN,
    "spark.decommission.enabled": "true",
    INTERVAL_KEY: "30s",
    POLICY_KEY: "ADD_TIME",
}
T0 = datetime(2026, 1, 1)


def started(conf: dict[str, str] | None = None) -> Harness:
    h = make_harness({**ROLLING, **(conf or {})})
    h.backend.start()
    h.run()
    for pod in h.executor_pods():
        h.set_phase(pod["metadata"]["name"], "Running")
    h.driver.summaries = [
        ExecutorSummary(id="driver", add_time=T0),
        *(ExecutorSummary(id=str(i), add_time=T0.replace(minute=10 - i), total_tasks=5) for i in (1, 2, 3)),
    ]
    h.run(1.0)
    return h


def test_the_policy_s_executor_is_decommissioned_each_interval_with_the_target_kept() -> None:
    h = started()
    h.run(28.0)
    assert h.driver.decommissioned == []
    h.run(1.0)
    assert [i for i, _ in h.driver.decommissioned] == ["3"]  # the oldest (ADD_TIME)
    assert h.driver.decommissioned[0][1].startswith("Rolling via ADD_TIME at ")
    assert h.backend.status()["allocator"]["targets"] == {0: 3}, "kept: the allocator replaces it"
    roller = h.backend.status()["roller"]
    assert roller["rolls"] == 1 and roller["policy"] == "ADD_TIME" and roller["interval"] == 30.0
    assert roller["recent_rolls"][0]["executor_id"] == "3"


def test_status_has_no_roller_when_rolling_is_off() -> None:
    h = make_harness()
    assert h.backend.status()["roller"] is None


def test_the_roller_is_the_first_thing_stopped_after_the_metrics() -> None:
    h = started()
    names = [name for name, _ in h.backend.parts.stop_sequence._steps]
    assert names[0] == "stop the executor roller"
    h.backend.stop()
    h.run(120.0)
    assert h.driver.decommissioned == []


def pick_highest(candidates: Sequence[ExecutorSummary]) -> str | None:
    return max(candidates, key=lambda s: int(s.id)).id


def create(conf: dict[str, str], **kwargs: object) -> KubernetesClusterSchedulerBackend:
    return KubernetesClusterSchedulerBackend.create(
        {**BASE_CONF, **conf},
        app_id=APP_ID,
        driver_url=DRIVER_URL,
        api=FakeKubernetes(),
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_policy_given_to_create_is_used() -> None:
    conf = {k: v for k, v in ROLLING.items() if k != POLICY_KEY}
    backend = create(conf, driver=RecordingDriver(), roll_policy=pick_highest)
    assert backend.status()["roller"]["policy"] == "python:test_backend_rolling:pick_highest"


@pytest.fixture
def hook_module(tmp_path: Path) -> str:
    (tmp_path / "my_rolling.py").write_text("def pick(candidates):\n    return None\nNOT_A_FUNCTION = 3\n")
    sys.path.insert(0, str(tmp_path))
    yield "my_rolling"
    sys.path.remove(str(tmp_path))
    sys.modules.pop("my_rolling", None)


def test_the_hook_key_names_a_function_the_driver_imports(hook_module: str) -> None:
    conf = {k: v for k, v in ROLLING.items() if k != POLICY_KEY}
    backend = create({**conf, HOOK_KEY: f"{hook_module}:pick"}, driver=RecordingDriver())
    assert backend.status()["roller"]["policy"] == "python:my_rolling:pick"


@pytest.mark.parametrize(
    "target", ["no_such_module_here:pick", "my_rolling:missing", "my_rolling:NOT_A_FUNCTION"]
)
def test_a_hook_that_cannot_be_had_is_a_config_error_naming_the_key(hook_module: str, target: str) -> None:
    conf = {k: v for k, v in ROLLING.items() if k != POLICY_KEY}
    with pytest.raises(ConfigError) as error:
        create({**conf, HOOK_KEY: target}, driver=RecordingDriver())
    assert error.value.key == HOOK_KEY and target in str(error.value)


def test_a_hook_in_both_create_and_the_key_is_refused(hook_module: str) -> None:
    conf = {k: v for k, v in ROLLING.items() if k != POLICY_KEY}
    with pytest.raises(ConfigError, match="keep one of them") as error:
        create({**conf, HOOK_KEY: f"{hook_module}:pick"}, driver=RecordingDriver(), roll_policy=pick_highest)
    assert error.value.key == HOOK_KEY


def test_a_policy_given_to_create_while_rolling_is_off_is_refused() -> None:
    with pytest.raises(ConfigError, match="executor rolling is off") as error:
        create({}, driver=RecordingDriver(), roll_policy=pick_highest)
    assert error.value.key == INTERVAL_KEY


def test_rolling_without_a_driver_is_refused_naming_the_interval() -> None:
    with pytest.raises(ConfigError, match="needs a driver") as error:
        create(ROLLING)
    assert error.value.key == INTERVAL_KEY
