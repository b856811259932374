"""The ``k8s-backend local`` command line (without starting a cluster)."""

from __future__ import annotations

import pytest

from k8s_backend.cli.local import describe
from k8s_backend.cli.main import main


def test_no_subcommand_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "local" in capsys.readouterr().out


def test_bad_node_count_is_refused_with_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["local", "--nodes", "0"]) == 2
    assert "--nodes=0: need at least 1 node" in capsys.readouterr().err


def test_bad_node_size_names_the_value(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["local", "--node-cpu", "many"]) == 2
    assert "node node-1 cpu: 'many' is not a Kubernetes quantity" in capsys.readouterr().err


def test_instructions_cover_kubectl_spark_and_the_token() -> None:
    text = describe("http://127.0.0.1:6443", "/tmp/kc", "/tmp/work", "s3cret", "apache/spark:4.0.0")
    assert "export KUBECONFIG=/tmp/kc" in text
    assert "pyspark --master k8s://http://127.0.0.1:6443" in text
    assert "--conf spark.kubernetes.container.image=apache/spark:4.0.0" in text
    assert "spark.kubernetes.authenticate.oauthToken=s3cret" in text
    assert "oauthToken" not in describe("http://h:1", "/k", "/w", None, "img")
