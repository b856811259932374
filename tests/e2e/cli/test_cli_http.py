"""Over HTTP with the real client: every bad input gets its message and the server sees no creation."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cli_support import APPS, IMAGE, AccessReviews, cli

from k8s_backend.cli.common.cluster_api import official_connector
from k8s_backend.kube.retry import RetryPolicy
from k8s_backend.local.apiserver import ApiServer
from k8s_backend.testing import FakeKubernetes

pytestmark = pytest.mark.http

TOKEN = "cli-token"
CREATED_KINDS = ("/pods", "/services", "/configmaps", "/persistentvolumeclaims")


@pytest.fixture
def fake() -> FakeKubernetes:
    return FakeKubernetes()


@pytest.fixture
def server(fake: FakeKubernetes) -> Iterator[ApiServer]:
    with ApiServer(fake, token=TOKEN) as running:
        yield running


def connect(environ: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    """The real adapter; retries do not wait, and the machine's kubeconfig stays out."""
    return official_connector(
        environ=environ or {"HOME": "/nonexistent"}, retry=RetryPolicy(sleep=lambda _: None, jitter=0.0)
    )


def submit(server_url: str, *extra: str, token: str = TOKEN, app: str = str(APPS / "pi.py")) -> list[str]:
    return [
        "submit",
        "--master",
        f"pyk8s://{server_url}",
        "--deploy-mode",
        "cluster",
        "--conf",
        IMAGE,
        "--conf",
        f"spark.kubernetes.authenticate.submission.oauthToken={token}",
        "--conf",
        "spark.kubernetes.submission.waitAppCompletion=false",
        *extra,
        app,
    ]


def creations(server: ApiServer) -> list[str]:
    return [
        f"{r.method} {r.path}"
        for r in server.request_log
        if r.method == "POST" and r.path.split("?")[0].endswith(CREATED_KINDS)
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_good_submission_creates_pod_service_and_config_map(server: ApiServer) -> None:
    result = cli(submit(server.url), connect=connect())
    assert result.code == 0, result.err
    assert [c.split("/")[-1] for c in creations(server)] == ["pods", "services", "configmaps"]


@pytest.mark.parametrize(
    ("extra", "app", "message"),
    [
        ([], "/no/such/app.py", "application file /no/such/app.py: no such file"),
        (
            ["--conf", "spark.executor.memory"],
            None,
            "--conf spark.executor.memory: a Spark property is written key=value",
        ),
        (["--conf", "spark.executor.cores=-1"], None, "spark.executor.cores=-1 is invalid"),
        (["--num-executors", "many"], None, "--num-executors many: must be a positive whole number"),
        (
            ["--conf", "spark.kubernetes.driver.label.spark-app-selector=x"],
            None,
            "spark-app-selector is reserved",
        ),
    ],
)
def test_bad_input_sends_no_request_at_all(
    server: ApiServer, extra: list[str], app: str | None, message: str
) -> None:
    result = cli(submit(server.url, *extra, app=app or str(APPS / "pi.py")), connect=connect())
    assert result.code == 2
    assert message in result.err
    assert server.request_log == []


def test_an_unreachable_api_server_names_the_url_and_where_it_came_from() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = cli(submit(url), connect=connect())
    assert result.code == 2
    assert f"cannot reach the Kubernetes API at {url}: GET {url}/api/v1/namespaces" in result.err
    assert result.err.count(f"from spark.master {url}") == 1  # where the URL came from, said once
    assert len(result.err.strip().splitlines()) == 1  # one line: the retries' giving up is not another


def test_an_unreachable_kubeconfig_server_names_the_kubeconfig(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": url}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    argv = ["submit", "--master", "pyk8s://", "--conf", IMAGE, str(APPS / "pi.py")]
    result = cli(argv, connect=connect({"KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)}))
    assert result.code == 2
    assert f"cannot reach the Kubernetes API at {url}: " in result.err
    assert result.err.count(f"kubeconfig {kubeconfig} (current context)") == 1


def test_rejected_credentials_create_nothing(server: ApiServer) -> None:
    result = cli(submit(server.url, token="wrong"), connect=connect())
    assert result.code == 2
    assert f"the Kubernetes API at {server.url} rejected the credentials (401 Unauthorized" in result.err
    assert [r.status for r in server.request_log] == [401]


def test_a_missing_permission_names_verb_and_resource_and_creates_nothing(fake: FakeKubernetes) -> None:
    with ApiServer(AccessReviews(fake, denied={("create", "configmaps")}), token=TOKEN) as server:
        result = cli(submit(server.url), connect=connect())
        assert result.code == 2
        assert "missing permission: create configmaps in namespace default" in result.err
        assert creations(server) == []
        assert any("selfsubjectaccessreviews" in r.path for r in server.request_log)


def test_a_forbidden_list_is_a_missing_permission(server: ApiServer, fake: FakeKubernetes) -> None:
    fake.fail_next("list", None, status=403, count=1, message='pods is forbidden: User "x" cannot list')
    result = cli(submit(server.url), connect=connect())
    assert result.code == 2
    assert "missing permission: list pods in namespace default" in result.err
    assert creations(server) == []


def test_client_mode_checks_the_cluster_the_same_way(server: ApiServer) -> None:
    argv = [
        "submit",
        "--master",
        f"pyk8s://{server.url}",
        "--conf",
        IMAGE,
        "--conf",
        "spark.kubernetes.authenticate.oauthToken=bad",
        str(APPS / "pi.py"),
    ]
    result = cli(argv, connect=connect())
    assert result.code == 2
    assert "rejected the credentials" in result.err
