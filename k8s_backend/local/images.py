"""Which image names a local cluster's pods get by default (light: no cluster is started by importing it)."""

from __future__ import annotations

from importlib import metadata


def default_spark_image() -> str:
    """The image name for executor (and driver) pods on a local cluster: the official image of the
    installed pyspark's version, since the kubelet runs pods on that pyspark whatever the name says."""
    try:
        return f"apache/spark:{metadata.version('pyspark')}"
    except metadata.PackageNotFoundError:
        return "apache/spark:latest"
