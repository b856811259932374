"""The application id is the spark-app-selector label of every object: one the API server refuses as a
label value is a ConfigError before anything is created."""

from __future__ import annotations

import pytest

from k8s_backend.assembly.application import check_identity
from k8s_backend.errors import ConfigError

DRIVER_URL = "spark://CoarseGrainedScheduler@driver:7078"


@pytest.mark.parametrize("app_id", ["my app", "spark-" + "a" * 58, "-spark", "spark/1"])
def test_an_app_id_that_is_no_label_value_is_refused(app_id: str) -> None:
    refused = r"^spark.app.id=.* is invalid: it is the spark-app-selector label"
    with pytest.raises(ConfigError, match=refused) as e:
        check_identity(app_id, DRIVER_URL)
    assert e.value.key == "spark.app.id"


@pytest.mark.parametrize(
    "app_id", ["spark-" + "0" * 32, "spark-" + "a" * 57, "local-1700000000000", "App_1.x"]
)
def test_spark_style_app_ids_pass(app_id: str) -> None:
    check_identity(app_id, DRIVER_URL)
