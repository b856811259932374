"""Cluster mode keeps secret properties out of the driver's ConfigMap: they travel in the driver's
Secret, which its container reads through a secretKeyRef variable that ``submit`` merges."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from k8s_backend.cli.common.driver_token import SECRET_CONF_ENV, SECRET_CONF_KEY, split_secret_properties
from k8s_backend.cli.common.errors import UsageError
from k8s_backend.cli.common.properties import parse_properties
from k8s_backend.cli.common.submit_args import merge_properties, parse_submit_args
from k8s_backend.cli.submit.cluster_mode import ClusterPlan, plan_cluster
from k8s_backend.cli.submit.submission import build_submission
from k8s_backend.kube.masters import IN_CLUSTER_MASTER
from k8s_backend.kube.port import SECRETS

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "d", "namespace": "team", "uid": "u-1"}}
S3_KEY, RPC = "zz-s3-secret-zz", "zz-rpc-secret-zz"


def plan(app: Path, *conf: str) -> ClusterPlan:
    argv = ["--master", "pyk8s://https://k8s.example:6443", "--deploy-mode", "cluster"]
    for pair in ("spark.kubernetes.container.image=spark:py", "spark.kubernetes.namespace=team", *conf):
        argv += ["--conf", pair]
    sub = build_submission(parse_submit_args([*argv, str(app)]), {})
    return plan_cluster(sub, IN_CLUSTER_MASTER, api_url="https://k8s.example:6443", environ={})


@pytest.fixture
def app(tmp_path: Path) -> Path:
    path = tmp_path / "main.py"
    path.write_text("print('main')\n")
    return path


def secret_conf(secret: dict[str, Any]) -> dict[str, str]:
    return parse_properties(base64.b64decode(secret["data"][SECRET_CONF_KEY]).decode())


def test_secret_properties_travel_in_the_secret_and_never_in_the_config_map(app: Path) -> None:
    p = plan(
        app,
        f"spark.hadoop.fs.s3a.secret.key={S3_KEY}",
        f"spark.authenticate.secret={RPC}",
        "spark.authenticate=true",
        "spark.kubernetes.driver.secrets.creds=/mnt/creds",
    )
    config_map = p.config_map(POD)
    assert S3_KEY not in json.dumps([config_map, p.pod]) and RPC not in json.dumps([config_map, p.pod])
    spark_properties = parse_properties(config_map["data"]["spark.properties"])
    assert spark_properties["spark.authenticate"] == "true"
    # Keys naming a Kubernetes Secret to mount hold no secret: they stay readable in the ConfigMap.
    assert spark_properties["spark.kubernetes.driver.secrets.creds"] == "/mnt/creds"
    secret = p.secret(POD)
    assert secret is not None and secret["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert "token" not in secret["data"]  # the driver needs no API token here
    assert secret_conf(secret) == {"spark.authenticate.secret": RPC, "spark.hadoop.fs.s3a.secret.key": S3_KEY}
    [env] = [e for e in p.pod["spec"]["containers"][0]["env"] if e["name"] == SECRET_CONF_ENV]
    ref = {"name": secret["metadata"]["name"], "key": SECRET_CONF_KEY}
    assert env == {"name": SECRET_CONF_ENV, "valueFrom": {"secretKeyRef": ref}}
    assert any(n.verb == "create" and n.resource == SECRETS for n in p.needs)


def test_without_secret_properties_there_is_no_secret(app: Path) -> None:
    p = plan(app, "spark.executor.memory=2g")
    assert p.secret(POD) is None
    assert all(e["name"] != SECRET_CONF_ENV for e in p.pod["spec"]["containers"][0]["env"])
    assert not any(n.resource == SECRETS for n in p.needs)


def test_a_token_and_secret_properties_share_the_secret_but_only_the_token_is_mounted(app: Path) -> None:
    p = plan(app, "spark.kubernetes.authenticate.driver.oauthToken=TOK", f"spark.ssl.keyPassword={RPC}")
    secret = p.secret(POD)
    assert secret is not None
    assert base64.b64decode(secret["data"]["token"]).decode() == "TOK"
    assert secret_conf(secret) == {"spark.ssl.keyPassword": RPC}
    [volume] = [v for v in p.pod["spec"]["volumes"] if "secret" in v]
    assert volume["secret"]["items"] == [{"key": "token", "path": "token"}]
    # The token-file key names a path, not a secret: it stays a plain property.
    assert "spark.kubernetes.authenticate.driver.oauthTokenFile" in parse_properties(
        p.config_map(POD)["data"]["spark.properties"]
    )


def test_the_redaction_regex_decides_what_is_secret() -> None:
    plain, secret = split_secret_properties(
        {"spark.redaction.regex": "(?i)mykey", "spark.my.mykey": "x", "spark.authenticate.secret": "y"}
    )
    assert secret == {"spark.my.mykey": "x"}
    assert "spark.authenticate.secret" in plain


def test_submit_merges_the_secret_properties_below_conf_and_above_the_properties_file(
    tmp_path: Path,
) -> None:
    props = tmp_path / "spark.properties"
    props.write_text("spark.a=file\nspark.b=file\nspark.c=file\n")
    args = parse_submit_args(["--properties-file", str(props), "--conf", "spark.a=conf", "app.py"])
    merged = merge_properties(args, {SECRET_CONF_ENV: "spark.a=secret\nspark.b=secret\n"}).properties
    assert (merged["spark.a"], merged["spark.b"], merged["spark.c"]) == ("conf", "secret", "file")


def test_a_malformed_secret_properties_variable_is_a_usage_error_naming_it() -> None:
    args = parse_submit_args(["app.py"])
    with pytest.raises(UsageError, match=SECRET_CONF_ENV):
        merge_properties(args, {SECRET_CONF_ENV: "spark.a=\\u12"})
