"""Where Spark's jars are: pip's pyspark carries them; a Spark distribution (the apache/spark images,
whose pyspark is /opt/spark/python/pyspark) keeps them in $SPARK_HOME/jars."""

from __future__ import annotations

from pathlib import Path

from k8s_backend.spark.jar import spark_jars_dir


def test_pips_pyspark_carries_its_jars(tmp_path: Path) -> None:
    (tmp_path / "pyspark" / "jars").mkdir(parents=True)
    (tmp_path / "home" / "jars").mkdir(parents=True)
    found = spark_jars_dir(tmp_path / "pyspark", {"SPARK_HOME": str(tmp_path / "home")})
    assert found == tmp_path / "pyspark" / "jars"


def test_sparks_own_pyspark_finds_them_under_spark_home(tmp_path: Path) -> None:
    (tmp_path / "python" / "pyspark").mkdir(parents=True)
    (tmp_path / "jars").mkdir()
    found = spark_jars_dir(tmp_path / "python" / "pyspark", {"SPARK_HOME": str(tmp_path)})
    assert found == tmp_path / "jars"
    # Without SPARK_HOME (or without jars there) the package's folder is named, for the error message.
    assert spark_jars_dir(tmp_path / "python" / "pyspark", {}) == tmp_path / "python" / "pyspark" / "jars"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert (
        spark_jars_dir(tmp_path / "python" / "pyspark", {"SPARK_HOME": str(empty)}).parent.name == "pyspark"
    )
