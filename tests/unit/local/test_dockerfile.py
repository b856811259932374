"""docker/Dockerfile installs k8s_backend's requirements (all but pyspark, which the Spark image has)."""

from __future__ import annotations

import configparser
import re
import zipfile
from importlib import metadata
from pathlib import Path

from repo import REPO_ROOT

ROOT = REPO_ROOT


def test_the_dockerfile_installs_every_requirement_but_pyspark() -> None:
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    required = {
        line.strip().replace(" ", "")
        for line in setup["options"]["install_requires"].splitlines()
        if line.strip() and not line.strip().startswith("pyspark")
    }
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    installed = set(re.findall(r'"([A-Za-z_]+[<>=][^"]+)"', dockerfile))
    assert installed == required


def test_the_dockerfile_puts_the_spark_images_py4j_on_the_path() -> None:
    pyspark_lib = Path(metadata.distribution("pyspark").locate_file("pyspark/python/lib"))
    zips = [p.name for p in pyspark_lib.glob("py4j-*-src.zip")]
    assert len(zips) == 1
    assert f"/opt/spark/python/lib/{zips[0]}" in (ROOT / "docker" / "Dockerfile").read_text()
    assert zipfile.is_zipfile(pyspark_lib / zips[0])
