"""``k8s-backend local --runtime containers``: refused, with the fix, where it cannot apply."""

from __future__ import annotations

import pytest
from cli_support import cli

from k8s_backend.testing import LocalCluster


# `local` reports on the process's stderr (it runs until Ctrl-C, outside the command's console).
def test_containers_need_the_real_control_plane(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["local", "--runtime", "containers"]).code == 2
    assert "--runtime containers needs --control-plane kubernetes" in capsys.readouterr().err


def test_containers_refuse_the_process_kubelets_options(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["local", "--runtime", "containers", "--control-plane", "kubernetes", "--nodes", "3"]
    assert cli(argv).code == 2
    assert "not with --runtime containers" in capsys.readouterr().err


def test_local_cluster_names_the_runtimes_and_what_containers_need() -> None:
    with pytest.raises(ValueError, match="'processes' or 'containers'"):
        LocalCluster(runtime="docker")
    with pytest.raises(ValueError, match="needs control_plane='kubernetes'"):
        LocalCluster(runtime="containers")
