"""The ``k8s-backend local`` command line (without starting a cluster)."""

from __future__ import annotations

import argparse
import io
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from k8s_backend.cli.local import configure_parser, describe, exposure_problem, is_loopback, run_local
from k8s_backend.cli.main import main


def test_no_subcommand_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "local" in capsys.readouterr().out


def test_bad_node_count_is_refused_with_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["local", "--nodes", "0"]) == 2
    assert "--nodes 0: need at least 1 node" in capsys.readouterr().err


def test_bad_node_size_names_the_value(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["local", "--node-cpu", "many"]) == 2
    assert "--node-cpu many: 'many' is not a Kubernetes quantity" in capsys.readouterr().err


def test_instructions_cover_kubectl_spark_and_the_token() -> None:
    text = describe("http://127.0.0.1:6443", "/tmp/kc", "/tmp/work", "s3cret", "apache/spark:4.0.0")
    assert "export KUBECONFIG=/tmp/kc" in text
    assert "pyspark --master k8s://http://127.0.0.1:6443" in text  # Spark's own backend
    assert "spark.master=pyk8s://http://127.0.0.1:6443" in text  # what session() and submit take
    assert "--conf spark.kubernetes.container.image=apache/spark:4.0.0" in text
    assert "spark.kubernetes.authenticate.oauthToken=s3cret" in text
    assert "oauthToken" not in describe("http://h:1", "/k", "/w", None, "img")
    with_ca = describe("https://127.0.0.1:6443", "/tmp/kc", "/tmp/w", "s3cret", "img", "/tmp/w/pki/ca.crt")
    assert with_ca.count("spark.kubernetes.authenticate.caCertFile=/tmp/w/pki/ca.crt") == 2


def test_an_empty_token_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["local", "--token", "", "--no-processes"]) == 2
    assert "--token is empty" in capsys.readouterr().err


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"])
def test_loopback_hosts_are_recognised(host: str) -> None:
    assert is_loopback(host)
    assert exposure_problem(host, None) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "example.com"])
def test_a_host_reachable_from_elsewhere_needs_a_token(host: str) -> None:
    assert not is_loopback(host)
    problem = exposure_problem(host, None)
    assert problem is not None and f"--host {host}" in problem and "--token" in problem
    assert exposure_problem(host, "s3cret") is None


def test_the_command_uses_a_random_token_and_prints_it(tmp_path: Path) -> None:
    out, ready, stop = io.StringIO(), threading.Event(), threading.Event()
    args = parse(["local", "--no-processes", "--work-dir", str(tmp_path)])
    runner = threading.Thread(
        target=run_local, args=(args,), kwargs={"out": out, "ready": ready, "stop": stop}
    )
    runner.start()
    try:
        assert ready.wait(30)
    finally:
        stop.set()
        runner.join(30)
    kubeconfig = yaml.safe_load((tmp_path / "kubeconfig").read_text())
    token = kubeconfig["users"][0]["user"]["token"]
    assert len(token) >= 32
    assert f"spark.kubernetes.authenticate.oauthToken={token}" in out.getvalue()
    # https by default, the CA in the kubeconfig (kubectl never sends a token over plain http)
    assert kubeconfig["clusters"][0]["cluster"]["server"].startswith("https://127.0.0.1:")
    assert kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"]
    assert f"spark.kubernetes.authenticate.caCertFile={tmp_path / 'pki' / 'ca.crt'}" in out.getvalue()


def test_no_tls_serves_plain_http(tmp_path: Path) -> None:
    out, ready, stop = io.StringIO(), threading.Event(), threading.Event()
    args = parse(["local", "--no-processes", "--no-tls", "--work-dir", str(tmp_path)])
    runner = threading.Thread(
        target=run_local, args=(args,), kwargs={"out": out, "ready": ready, "stop": stop}
    )
    runner.start()
    try:
        assert ready.wait(30)
    finally:
        stop.set()
        runner.join(30)
    kubeconfig = yaml.safe_load((tmp_path / "kubeconfig").read_text())
    assert kubeconfig["clusters"][0]["cluster"]["server"].startswith("http://127.0.0.1:")
    assert "caCertFile" not in out.getvalue()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configure_parser(parser)
    return parser.parse_args(argv[1:])


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--host", "0.0.0.0", "--token", "t"], "--host 0.0.0.0"),
        (["--port", "6443"], "--port 6443"),
        (["--no-tls"], "--no-tls"),
    ],
)
def test_options_a_real_control_plane_cannot_honour_are_refused(
    flags: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["local", "--control-plane", "kubernetes", *flags]) == 2
    err = capsys.readouterr().err
    assert f"{named}: not with --control-plane kubernetes" in err
    assert "127.0.0.1" in err


def test_a_real_control_plane_without_go_is_one_line_naming_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("K8S_BACKEND_CACHE_DIR", str(tmp_path / "cache"))  # nothing cached there
    monkeypatch.setenv("PATH", str(tmp_path))  # and no Go
    monkeypatch.delenv("GO", raising=False)
    assert main(["local", "--control-plane", "kubernetes", "--no-processes"]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("k8s-backend: error: the real control plane needs Go >= 1.26 on PATH")


def test_the_instructions_say_which_control_plane_runs() -> None:
    real = describe("https://127.0.0.1:1", "/k", "/w", "t", "img", "/ca", control_plane="kubernetes")
    assert "API server:  https://127.0.0.1:1\n" in real  # the URL ends its line, for scripts
    assert (
        "served by:   a real control plane (kube-apiserver, etcd, kube-scheduler, kube-controller-manager)"
        in real
    )
    assert "served by:   the embedded API server" in describe(
        "https://127.0.0.1:1", "/k", "/w", "t", "img", "/ca"
    )


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("k8s-backend: error: ")
    return line.removeprefix("k8s-backend: error: ")


@pytest.mark.parametrize(
    ("flags", "told"),
    [
        (["--port", "99999"], "--port 99999: not a TCP port; use 1 to 65535, or leave --port out"),
        (["--port", "-1"], "--port -1: not a TCP port"),
        (["--stop-grace", "-1"], "--stop-grace -1: must be 0 or more seconds"),
        (["--stop-grace", "nan"], "--stop-grace nan: must be 0 or more seconds"),
        (["--nodes", "0"], "--nodes 0: need at least 1 node"),
        (["--node-cpu", "many"], "--node-cpu many: 'many' is not a Kubernetes quantity"),
        (["--node-memory", "0"], "--node-memory 0: must be more than 0, e.g. 16Gi"),
        (
            ["--work-dir", "/etc/passwd"],
            "--work-dir /etc/passwd: is a file, not a directory; give a directory",
        ),
    ],
)
def test_a_bad_option_is_one_line_naming_it_and_the_fix(
    flags: list[str], told: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["local", "--no-processes", *flags]) == 2
    assert one_error_line(capsys).startswith(told)


def test_a_port_in_use_is_one_line_naming_the_port(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = ["local", "--no-processes", "--no-tls", "--port", str(port), "--work-dir", str(tmp_path)]
        assert main(argv) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"--port {port}: 127.0.0.1:{port} is already in use; pick another port")


def test_a_host_that_is_not_this_machines_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["local", "--no-processes", "--host", "192.0.2.1", "--token", "t", "--work-dir", str(tmp_path)]
    assert main(argv) == 2  # 192.0.2.1: TEST-NET-1, never an address of this machine
    assert one_error_line(capsys).startswith("--host 192.0.2.1: not an address of this machine")


def test_a_work_dir_that_cannot_be_made_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("")
    assert main(["local", "--no-processes", "--work-dir", str(tmp_path / "file" / "sub")]) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"--work-dir {tmp_path / 'file' / 'sub'}: cannot use it (Not a directory")


def run_until_ready(argv: list[str], check: Any) -> str:
    """Run ``k8s-backend local`` with ``argv`` in a thread, call ``check()`` once it is up, stop it."""
    out, ready, stop = io.StringIO(), threading.Event(), threading.Event()
    runner = threading.Thread(
        target=run_local, args=(parse(argv),), kwargs={"out": out, "ready": ready, "stop": stop}
    )
    runner.start()
    try:
        assert ready.wait(30)
        check()
    finally:
        stop.set()
        runner.join(30)
    return out.getvalue()


def test_kubeconfig_adds_the_cluster_as_the_current_context_and_takes_it_out_on_exit(tmp_path: Path) -> None:
    from kubernetes import client, config

    path = tmp_path / "config"
    theirs = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "prod", "cluster": {"server": "https://prod.example:6443"}}],
        "users": [{"name": "me", "user": {"token": "t"}}],
        "contexts": [{"name": "prod", "context": {"cluster": "prod", "user": "me"}}],
        "current-context": "prod",
    }
    path.write_text(yaml.safe_dump(theirs))

    def check() -> None:
        merged = yaml.safe_load(path.read_text())
        assert merged["current-context"] == "mine"
        assert [c["name"] for c in merged["contexts"]] == ["prod", "mine"]
        assert path.stat().st_mode & 0o777 == 0o600  # it holds a token
        api = client.CoreV1Api(config.new_client_from_config(str(path), context="mine"))
        assert api.list_namespaced_pod("default").items == []  # the entry reaches this cluster

    argv = ["local", "--no-processes", "--work-dir", str(tmp_path / "w")]
    out = run_until_ready([*argv, "--kubeconfig", str(path), "--context", "mine"], check)
    assert f"{path}  (context mine" in out
    assert yaml.safe_load(path.read_text()) == theirs  # as it was: entry gone, prod current again
    created = tmp_path / "new-config"
    run_until_ready([*argv, "--kubeconfig", str(created)], lambda: None)
    assert not created.exists()  # made for this cluster alone: gone with it


@pytest.mark.parametrize(
    ("flags", "told"),
    [
        (["--context", "x"], "--context x: names the context added to --kubeconfig PATH"),
        (["--kubeconfig", "{tmp}"], "is a directory"),
        (["--kubeconfig", "{tmp}/nodir/config"], "no directory"),
        (["--kubeconfig", "{tmp}/bad"], "not a kubeconfig"),
        (["--kubeconfig", "{tmp}/taken"], "already has a context named k8s-backend-local; choose another"),
        (["--kubeconfig", "{tmp}/c", "--context", " "], "--context is empty"),
    ],
)
def test_a_kubeconfig_that_cannot_take_the_cluster_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], told: str
) -> None:
    (tmp_path / "bad").write_text("- just\n- a list\n")
    taken = {"contexts": [{"name": "k8s-backend-local", "context": {}}]}
    (tmp_path / "taken").write_text(yaml.safe_dump(taken))
    argv = ["local", "--no-processes", *(flag.replace("{tmp}", str(tmp_path)) for flag in flags)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("k8s-backend: error: ") and told in err[0], err


def test_the_instructions_of_a_real_node_name_its_image_and_the_bridge_gateway() -> None:
    text = describe(
        "https://127.0.0.1:1", "/k", "/w", "t", "docker.io/k8s-backend/spark:4.3.0", "/ca",
        control_plane="kubernetes", driver_host="198.18.0.1", runtime="containers",
    )  # fmt: skip
    assert "and a real node (kubelet, containerd, runc)" in text
    assert "executor pods run in containers of docker.io/k8s-backend/spark:4.3.0" in text
    assert "--conf spark.driver.host=198.18.0.1" in text and "local JVMs" not in text
    assert "--conf spark.driver.host=127.0.0.1" in describe("http://h:1", "/k", "/w", None, "img")
