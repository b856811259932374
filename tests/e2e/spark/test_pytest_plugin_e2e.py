"""The pytest plugin on a user's test module, run by pytester in a fresh process: the session-scoped
``spark`` fixture on ``pyk8s://local`` with the chosen executor count and memory, and executors killed
and decommissioned mid-test while a job's cached data has to be recomputed."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

pytest_plugins = ("pytester",)

USER_TESTS = '''
SEEN = []

def test_the_session_has_the_chosen_executors(spark, pyk8s_executors):
    SEEN.append(spark)
    assert spark.sparkContext.master == "pyk8s://local"
    assert spark.conf.get("spark.executor.memory") == "512m"
    assert len(pyk8s_executors.ids()) == 2
    assert spark.range(1000).selectExpr("sum(id)").first()[0] == 499500

def test_a_job_survives_a_killed_executor(spark, pyk8s_executors):
    rdd = spark.sparkContext.parallelize(range(1000), 4).map(lambda x: x * 2).cache()
    assert rdd.sum() == 999000
    killed = pyk8s_executors.kill()
    pyk8s_executors.wait_until_gone(killed)
    assert rdd.sum() == 999000  # the lost cached partitions are recomputed
    replaced = pyk8s_executors.wait_for(2)
    assert killed not in replaced
    print("KILLED", killed, "NOW", replaced)

def test_a_job_survives_a_decommissioned_executor(spark, pyk8s_executors):
    gone = pyk8s_executors.decommission()
    pyk8s_executors.wait_until_gone(gone)
    assert spark.sparkContext.parallelize(range(100), 4).sum() == 4950
    assert gone not in pyk8s_executors.wait_for(2)
    print("DECOMMISSIONED", gone)

def test_the_same_session_is_shared(spark):
    assert SEEN and spark is SEEN[0]
'''


def test_users_tests_get_a_pyk8s_session_and_lose_executors_mid_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_subprocess(
        "-s",
        "-p",
        "no:cacheprovider",
        "--pyk8s-executors=2",
        "--pyk8s-executor-memory=512m",
        "--pyk8s-conf=spark.ui.enabled=false",
        timeout=800,
    )
    text = "\n".join(result.outlines + result.errlines)
    assert result.ret == 0, text[-8000:]
    result.assert_outcomes(passed=4)
    assert "KILLED" in text
    assert "DECOMMISSIONED" in text
