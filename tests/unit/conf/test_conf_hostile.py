"""Hostile or absurd input is refused at start with a ConfigError naming the key (issue 22), and a
configuration fuzz: any value of any key either parses or is refused that way, never with another error."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k8s_backend import KubernetesClusterSchedulerBackend
from k8s_backend.conf import keys
from k8s_backend.conf.model import REDACTED, KubernetesConf
from k8s_backend.conf.spec import Use
from k8s_backend.conf.units import MAX_DURATION_DAYS
from k8s_backend.errors import ConfigError
from k8s_backend.gang.volcano import TEMPLATE_KEY as POD_GROUP_TEMPLATE_KEY
from k8s_backend.gang.volcano import load_template as load_pod_group_template
from k8s_backend.kube.port import PODS
from k8s_backend.pods.yaml_bounded import MAX_ALIASES, MAX_BYTES
from k8s_backend.testing import FakeKubernetes

IMAGE = {"spark.kubernetes.container.image": "spark:4.3.0"}
EXECUTOR_TEMPLATE_KEY = "spark.kubernetes.executor.podTemplateFile"


def create(props: dict[str, str], fake: FakeKubernetes | None = None) -> KubernetesClusterSchedulerBackend:
    return KubernetesClusterSchedulerBackend.create(
        {**IMAGE, **props},
        app_id="app-hostile",
        driver_url="spark://CoarseGrainedScheduler@d:7078",
        api=fake or FakeKubernetes(),
    )


def refused_at_start(props: dict[str, str], key: str) -> ConfigError:
    """Creating the backend raises a ConfigError naming ``key``, and nothing reaches the API."""
    fake = FakeKubernetes()
    with pytest.raises(ConfigError) as caught:
        create(props, fake)
    assert caught.value.key == key
    assert key in str(caught.value)
    assert fake.calls == []
    return caught.value


def billion_laughs(levels: int) -> str:
    """The 'billion laughs' YAML: each level is a list of ten aliases of the one before."""
    lines = ['a0: &a0 ["lol"]']
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 10)}]")
    lines.append(f"spec: {{containers: [{{name: c, args: *a{levels}}}]}}")
    return "\n".join(lines) + "\n"


# --- pod templates --------------------------------------------------------------------------------


@pytest.mark.parametrize("levels", [6, 7])
def test_a_billion_laughs_pod_template_is_refused_naming_the_key(tmp_path: Path, levels: int) -> None:
    template = tmp_path / "laughs.yaml"
    template.write_text(billion_laughs(levels))
    assert template.stat().st_size < 600  # a few hundred bytes, as the audit's 368-byte file
    error = refused_at_start({EXECUTOR_TEMPLATE_KEY: str(template)}, EXECUTOR_TEMPLATE_KEY)
    assert f"more than {MAX_ALIASES} YAML aliases" in str(error)


def test_a_template_with_exactly_the_alias_bound_is_accepted(tmp_path: Path) -> None:
    template = tmp_path / "aliases.yaml"
    refs = ", ".join(["*e"] * MAX_ALIASES)
    template.write_text(f"x: &e {{name: E, value: v}}\nspec: {{containers: [{{name: c, env: [{refs}]}}]}}\n")
    create({EXECUTOR_TEMPLATE_KEY: str(template)})
    template.write_text(
        f"x: &e {{name: E, value: v}}\nspec: {{containers: [{{name: c, env: [{refs}, *e]}}]}}\n"
    )
    refused_at_start({EXECUTOR_TEMPLATE_KEY: str(template)}, EXECUTOR_TEMPLATE_KEY)


def test_a_template_beyond_the_size_bound_is_refused(tmp_path: Path) -> None:
    template = tmp_path / "huge.yaml"
    template.write_text("metadata: {labels: {a: b}}\n" + "#" * MAX_BYTES + "\n")
    error = refused_at_start({EXECUTOR_TEMPLATE_KEY: str(template)}, EXECUTOR_TEMPLATE_KEY)
    assert f"larger than {MAX_BYTES} bytes" in str(error)


def test_a_billion_laughs_pod_group_template_is_refused_naming_the_key(tmp_path: Path) -> None:
    template = tmp_path / "podgroup.yaml"
    template.write_text("kind: PodGroup\n" + billion_laughs(7).replace("spec: {containers:", "x: {y:"))
    with pytest.raises(ConfigError) as caught:
        load_pod_group_template(str(template))
    assert caught.value.key == POD_GROUP_TEMPLATE_KEY and POD_GROUP_TEMPLATE_KEY in str(caught.value)


# --- durations ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["100000000000d", f"{MAX_DURATION_DAYS + 1}d", "9223372036854775807ms"])
def test_a_duration_the_clock_cannot_hold_is_refused_naming_the_key(value: str) -> None:
    error = refused_at_start({"spark.kubernetes.stopTimeout": value}, "spark.kubernetes.stopTimeout")
    assert f"at most {MAX_DURATION_DAYS}d" in str(error)


def test_the_longest_duration_accepted_still_lets_stop_return() -> None:
    fake = FakeKubernetes()
    backend = create({"spark.kubernetes.stopTimeout": f"{MAX_DURATION_DAYS}d"}, fake)
    backend.start()
    backend.stop()  # raised OverflowError with 100000000000d, and the backend stayed "stopping"
    assert backend.status()["state"] in ("stopped", "STOPPED")
    assert fake.objects(PODS, "default") == []


# --- file names -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["t" * 256 + ".html", "t" * 250 + ".html"])
def test_a_timeline_file_name_the_file_system_cannot_hold_is_refused_at_start(
    tmp_path: Path, name: str
) -> None:
    # 250 + 5 bytes fit, but not with the ".partial" suffix the page is first written under.
    key = "spark.kubernetes.report.timeline"
    error = refused_at_start({key: str(tmp_path / name)}, key)
    assert "shorter name" in str(error)


def test_a_timeline_path_longer_than_the_file_system_holds_is_refused(tmp_path: Path) -> None:
    key = "spark.kubernetes.report.timeline"
    deep = tmp_path.joinpath(*["d" * 200] * 25, "t.html")
    error = refused_at_start({key: str(deep)}, key)
    assert "shorter" in str(error)


# --- credentials under unknown keys ---------------------------------------------------------------


def test_a_token_under_a_misspelt_key_is_redacted_and_the_key_is_told(
    caplog: pytest.LogCaptureFixture,
) -> None:
    token = "eyJhbGciOiJSUzI1NiIsImtpZCI6InNlY3JldCJ9.payload.signature"
    with caplog.at_level(logging.WARNING, logger="k8s_backend.conf"):
        conf = KubernetesConf.from_spark_conf({**IMAGE, "spark.kubernetes.authenticate.oauthTokn": token})
    assert token not in repr(conf)
    assert REDACTED in repr(conf)
    told = [m for m in caplog.messages if "spark.kubernetes.authenticate.oauthTokn" in m]
    assert len(told) == 1
    assert "did you mean spark.kubernetes.authenticate.oauthToken?" in told[0]
    assert token not in caplog.text


@pytest.mark.parametrize(
    "name",
    [
        "spark.my.apiToken",
        "spark.custom.SECRET",
        "spark.db.passwd",
        "spark.db.password",
        "spark.cloud.credentials",
        "spark.s3.signingKey",
    ],
)
def test_keys_that_look_like_credentials_are_redacted_even_if_spark_misses_them(name: str) -> None:
    conf = KubernetesConf.from_spark_conf(
        {**IMAGE, name: "hunter2-value", "spark.redaction.regex": "(?i)nothing-matches-this"}
    )
    assert "hunter2-value" not in repr(conf)


def test_plain_keys_stay_readable_in_reprs() -> None:
    conf = KubernetesConf.from_spark_conf({**IMAGE, "spark.app.name": "visible-name"})
    assert "visible-name" in repr(conf)


# --- the configuration fuzz -----------------------------------------------------------------------

READ_KEYS = sorted(row.name for row in keys.KEYS if not row.is_prefix and row.use is Use.READ)

HOSTILE_VALUES = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            "100000000000d",
            "9223372036854775808",
            "-9223372036854775809",
            "1e309",
            "nan",
            "inf",
            "-0",
            "0x10",
            "1_000",
            "\x00",
            "\uff11\uff12",  # full-width digits: int() would take them, Spark does not
            "t" * 300,
            "${spark.app.name}",
            "99999999999999999999999999999999999999g",
        ]
    ),
    st.integers().map(str),
    st.builds(lambda n, unit: f"{n}{unit}", st.integers(), st.sampled_from(["ms", "s", "h", "d", "g", "k"])),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(READ_KEYS), value=HOSTILE_VALUES)
def test_any_value_of_any_key_parses_or_is_refused_naming_the_key(name: str, value: str) -> None:
    try:
        KubernetesConf.from_spark_conf({**IMAGE, name: value})
    except ConfigError as error:
        # The key itself, or a key it is checked together with (a cross-key rule names both).
        assert error.key is not None or name in str(error), f"{name}={value!r}: {error}"
        assert name in str(error) or (error.key is not None and error.key in str(error)), str(error)


def test_an_unknown_key_is_told_once_however_often_the_properties_are_parsed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    props = {**IMAGE, "spark.kubernetes.executor.podNamePrefx": "x"}
    with caplog.at_level(logging.WARNING, logger="k8s_backend.conf"):
        conf = KubernetesConf.from_spark_conf(props)
        conf.with_properties({"spark.executor.cores": "2"})
        KubernetesConf.from_spark_conf(props)
    told = [m for m in caplog.messages if "podNamePrefx" in m]
    assert len(told) == 1 and "did you mean spark.kubernetes.executor.podNamePrefix?" in told[0]
