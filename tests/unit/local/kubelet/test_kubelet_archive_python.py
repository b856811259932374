"""A pod's ``PYSPARK_PYTHON`` into an ``--archives`` environment (a relative path) is kept by the kubelet."""

from __future__ import annotations

import sys

import pytest

from k8s_backend.local.kubelet.container import keeps_python


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ("./environment/bin/python", True),  # unpacked by Spark in the working directory, later
        ("environment/bin/python3", True),
        (sys.executable, True),  # an interpreter on this machine
        ("/usr/bin/python3-not-here", False),  # the image's: replaced by this machine's
        ("python3-not-here", False),
        ("", False),
    ],
)
def test_a_relative_python_into_an_archive_is_kept(value: str, kept: bool) -> None:
    assert keeps_python(value) is kept
