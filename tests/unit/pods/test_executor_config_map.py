"""The executor ConfigMap: conf dir file selection and the object the backend creates."""

from __future__ import annotations

import logging

from pod_builder_fixtures import DRIVER_POD, make_conf

from k8s_backend.conf.model import KubernetesConf
from k8s_backend.pods.config_map import (
    build_executor_config_map,
    default_conf_dir,
    executor_config_map_name,
    java_properties,
    load_conf_dir_files,
)


def test_config_map_name() -> None:
    assert executor_config_map_name("1a2b3c") == "spark-exec-1a2b3c-conf-map"
    long = executor_config_map_name("x" * 300)
    assert len(long) == 253
    assert long.endswith("-conf-map")


def test_conf_dir_file_selection(tmp_path, caplog) -> None:
    (tmp_path / "log4j2.properties").write_text("rootLogger.level = info\n")
    (tmp_path / "spark-env.sh").write_text("export A=1\n")
    (tmp_path / "spark-defaults.conf").write_text("spark.a 1\n")  # Spark properties travel by RPC
    (tmp_path / "spark.properties").write_text("x=1\n")
    (tmp_path / "log4j2.properties.template").write_text("t\n")
    (tmp_path / "extra.jar").write_bytes(b"PK")
    (tmp_path / "bundle.tar").write_bytes(b"x")
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "nested.xml").write_text("<a/>")
    with caplog.at_level(logging.WARNING, logger="k8s_backend.pods.config_map"):
        files = load_conf_dir_files(str(tmp_path), 1048576)
    assert files == {"log4j2.properties": "rootLogger.level = info\n", "spark-env.sh": "export A=1\n"}
    assert "not UTF-8" in caplog.text


def test_conf_dir_files_smallest_first_within_the_budget(tmp_path, caplog) -> None:
    (tmp_path / "a.xml").write_text("a" * 40)  # 5 + 40 = 45
    (tmp_path / "b.xml").write_text("b" * 10)  # 15
    (tmp_path / "c.xml").write_text("c" * 20)  # 25
    (tmp_path / "huge.xml").write_text("h" * 200)  # larger than the whole budget: never a candidate
    with caplog.at_level(logging.WARNING, logger="k8s_backend.pods.config_map"):
        files = load_conf_dir_files(str(tmp_path), 60)
    # b (15) and c (25) fit (40 < 60); a would make 85.
    assert list(files) == ["b.xml", "c.xml"]
    assert "Skipped conf file(s) a.xml" in caplog.text


def test_no_conf_dir() -> None:
    assert load_conf_dir_files(None, 100) == {}
    assert load_conf_dir_files("/no/such/dir", 100) == {}


def test_default_conf_dir() -> None:
    conf = make_conf(properties={"spark.home": "/opt/spark"})
    assert default_conf_dir(conf, {"SPARK_CONF_DIR": "/etc/spark"}) == "/etc/spark"
    assert default_conf_dir(conf, {}) == "/opt/spark/conf"
    assert default_conf_dir(make_conf(), {}) is None


def test_executor_config_map(tmp_path) -> None:
    (tmp_path / "log4j2.properties").write_text("rootLogger.level = info\n")
    conf = KubernetesConf(namespace="spark-jobs")
    config_map = build_executor_config_map(
        conf,
        app_id="spark-123",
        name="spark-exec-abc-conf-map",
        driver_pod=DRIVER_POD,
        conf_dir=str(tmp_path),
    )
    assert config_map == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "spark-exec-abc-conf-map",
            "namespace": "spark-jobs",
            "labels": {"spark-app-selector": "spark-123", "spark-role": "executor"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": "driver-pod",
                    "uid": "driver-uid",
                    "controller": True,
                }
            ],
        },
        "immutable": True,
        "data": {
            "log4j2.properties": "rootLogger.level = info\n",
            "spark.properties": "#Java properties built from Kubernetes config map with name: "
            "spark-exec-abc-conf-map\nspark.kubernetes.namespace=spark-jobs\n",
            "spark.kubernetes.namespace": "spark-jobs",
        },
    }


def test_executor_config_map_without_driver_pod() -> None:
    config_map = build_executor_config_map(
        KubernetesConf(), app_id="a", name="n", driver_pod=None, conf_dir=None
    )
    assert "ownerReferences" not in config_map["metadata"]
    assert set(config_map["data"]) == {"spark.properties", "spark.kubernetes.namespace"}


def test_java_properties_escaping() -> None:
    text = java_properties({"a key": "x=y:z #1", "k": " lead"}, "c")
    assert text == "#c\na\\ key=x\\=y\\:z \\#1\nk=\\ lead\n"


def test_files_whose_names_are_not_config_map_keys_are_skipped(tmp_path) -> None:
    (tmp_path / "my file.xml").write_text("<a/>")
    (tmp_path / "core-site.xml").write_text("<b/>")
    assert load_conf_dir_files(str(tmp_path), 1000) == {"core-site.xml": "<b/>"}
