"""spark-submit's command line: option forms, the application boundary, properties files and precedence."""

from __future__ import annotations

from pathlib import Path

import pytest

from k8s_backend.cli.common.errors import UsageError
from k8s_backend.cli.common.properties import default_properties_file, parse_properties, read_properties_file
from k8s_backend.cli.common.submit_args import merge_properties, parse_conf_pair, parse_submit_args

# -- properties files ---------------------------------------------------------------------------------


def test_properties_accept_every_java_separator_and_trim_values() -> None:
    text = "a=1\nb: 2\nc 3\n  d   =   4  \ne\tfive\n"
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "4", "e": "five"}


def test_properties_skip_comments_and_blank_lines_and_later_keys_win() -> None:
    text = "# comment\n! also a comment\n\nkey=old\n   # indented comment\nkey=new\n"
    assert parse_properties(text) == {"key": "new"}


def test_properties_join_continued_lines_and_decode_escapes() -> None:
    text = "long=first \\\n    second\nesc=tab\\there\\u0041\nk\\=x=v\nodd=ends\\\\\nnext=1\n"
    assert parse_properties(text) == {
        "long": "first second",
        "esc": "tab\thereA",
        "k=x": "v",
        "odd": "ends\\",
        "next": "1",
    }


def test_a_malformed_unicode_escape_names_the_line() -> None:
    with pytest.raises(ValueError, match=r"line 2: malformed \\uXXXX escape"):
        parse_properties("ok=1\nbad=\\u12x\n")


def test_reading_a_missing_properties_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--properties-file .*nope.conf: no such file"):
        read_properties_file(str(tmp_path / "nope.conf"))


def test_default_properties_file_follows_spark_submit_lookup(tmp_path: Path) -> None:
    conf_dir, home = tmp_path / "conf", tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "spark-defaults.conf").write_text("spark.a=1\n")
    assert default_properties_file({"SPARK_HOME": str(home)}) == str(home / "conf" / "spark-defaults.conf")
    conf_dir.mkdir()
    # SPARK_CONF_DIR wins over SPARK_HOME, and a missing file there means no defaults at all.
    assert default_properties_file({"SPARK_CONF_DIR": str(conf_dir), "SPARK_HOME": str(home)}) is None
    (conf_dir / "spark-defaults.conf").write_text("spark.a=2\n")
    env = {"SPARK_CONF_DIR": str(conf_dir), "SPARK_HOME": str(home)}
    assert default_properties_file(env) == str(conf_dir / "spark-defaults.conf")
    assert default_properties_file({}) is None


# -- option forms ---------------------------------------------------------------------------------------


def test_both_option_forms_and_short_aliases_are_accepted() -> None:
    args = parse_submit_args(
        [
            "--master=pyk8s://local",
            "--deploy-mode",
            "cluster",
            "--conf=spark.a=x=y",
            "-c",
            "spark.b=2",
            "--conf",
            "spark.c=",
            "-v",
            "app.py",
        ]
    )
    assert args.flags == {"--master": "pyk8s://local", "--deploy-mode": "cluster"}
    assert args.conf == (("spark.a", "x=y"), ("spark.b", "2"), ("spark.c", ""))
    assert args.verbose
    assert args.app == "app.py"


def test_everything_after_the_application_belongs_to_it() -> None:
    args = parse_submit_args(["--name", "n", "app.py", "--master", "x", "-v", "10"])
    assert args.app == "app.py"
    assert args.app_args == ("--master", "x", "-v", "10")
    assert args.flags == {"--name": "n"}
    assert not args.verbose


def test_a_repeated_flag_keeps_the_last_value() -> None:
    assert parse_submit_args(["--num-executors", "2", "--num-executors=5", "a.py"]).flags == {
        "--num-executors": "5"
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--master"], "Missing argument for option '--master'"),
        (["--bogus", "a.py"], "Unrecognized option '--bogus'"),
        (["--class", "Main", "a.py"], "--class is not supported by k8s-backend submit"),
        (["--total-executor-cores", "8", "a.py"], "--total-executor-cores is not supported.*--num-executors"),
        (["--verbose=yes", "a.py"], "--verbose takes no value"),
        (["--conf", "spark.x", "a.py"], "--conf spark.x: a Spark property is written key=value"),
        (["--conf", "=v", "a.py"], "the property name before '=' is empty"),
    ],
)
def test_bad_command_lines_say_what_is_wrong(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        parse_submit_args(argv)


@pytest.mark.parametrize("flag", ["-n", "--namespace"])
def test_submit_takes_the_namespace_as_the_other_commands_do(tmp_path: Path, flag: str) -> None:
    props = _props(tmp_path, [flag, "jobs", "--conf", "spark.kubernetes.namespace=other", "a.py", "-n", "x"])
    assert props["spark.kubernetes.namespace"] == "jobs"  # the flag wins over --conf, as flags do
    assert parse_submit_args([flag, "jobs", "a.py", "-n", "x"]).app_args == ("-n", "x")  # the app's own


def test_conf_pairs_keep_equals_signs_in_values() -> None:
    assert parse_conf_pair("spark.driver.extraJavaOptions=-Da=b -Dc=d") == (
        "spark.driver.extraJavaOptions",
        "-Da=b -Dc=d",
    )


# -- precedence -----------------------------------------------------------------------------------------


def _props(tmp_path: Path, argv: list[str], environ: dict[str, str] | None = None) -> dict[str, str]:
    return dict(merge_properties(parse_submit_args(argv), environ or {}).properties)


def test_flags_beat_conf_which_beats_the_properties_file(tmp_path: Path) -> None:
    file = tmp_path / "my.conf"
    file.write_text("spark.executor.memory=1g\nspark.executor.cores=3\nspark.app.name=fromfile\n")
    props = _props(
        tmp_path,
        [
            "--properties-file",
            str(file),
            "--conf",
            "spark.executor.memory=2g",
            "--conf",
            "spark.executor.instances=7",
            "--num-executors",
            "4",
            "a.py",
        ],
    )
    assert props["spark.executor.memory"] == "2g"  # --conf over the file
    assert props["spark.executor.instances"] == "4"  # the flag over --conf
    assert props["spark.executor.cores"] == "3"  # the file when nothing else sets it
    assert props["spark.app.name"] == "fromfile"


def test_spark_defaults_are_read_unless_a_properties_file_is_given(tmp_path: Path) -> None:
    (tmp_path / "spark-defaults.conf").write_text("spark.from.defaults=1\n")
    other = tmp_path / "other.conf"
    other.write_text("spark.from.other=1\n")
    env = {"SPARK_CONF_DIR": str(tmp_path)}
    assert _props(tmp_path, ["a.py"], env)["spark.from.defaults"] == "1"
    given = _props(tmp_path, ["--properties-file", str(other), "a.py"], env)
    assert "spark.from.defaults" not in given
    assert given["spark.from.other"] == "1"
    both = _props(tmp_path, ["--properties-file", str(other), "--load-spark-defaults", "a.py"], env)
    assert both["spark.from.defaults"] == "1" and both["spark.from.other"] == "1"


def test_non_spark_keys_are_ignored_with_a_warning(tmp_path: Path) -> None:
    merged = merge_properties(parse_submit_args(["--conf", "foo.bar=1", "a.py"]), {})
    assert "foo.bar" not in merged.properties
    assert merged.warnings == ("Ignoring non-Spark config property: foo.bar",)


def test_defaults_for_name_deploy_mode_and_the_master_environment_variable(tmp_path: Path) -> None:
    props = _props(tmp_path, ["dir/app.py"], {"MASTER": "pyk8s://local"})
    assert props["spark.app.name"] == "app.py"
    assert props["spark.submit.deployMode"] == "client"
    assert props["spark.master"] == "pyk8s://local"
    assert _props(tmp_path, ["--master", "pyk8s://", "a.py"], {"MASTER": "x"})["spark.master"] == "pyk8s://"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--num-executors", "0", "a.py"], "--num-executors 0: must be a positive whole number"),
        (["--executor-cores", "two", "a.py"], "--executor-cores two: must be a positive whole number"),
        (["--deploy-mode", "remote", "a.py"], "--deploy-mode remote: must be client or cluster"),
        (
            ["--conf", "spark.submit.deployMode=x", "a.py"],
            "spark.submit.deployMode=x: must be client or cluster",
        ),
    ],
)
def test_spark_submit_flag_checks(tmp_path: Path, argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        _props(tmp_path, argv)
