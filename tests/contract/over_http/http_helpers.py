"""Helpers for the HTTP tests: an adapter for an ApiServer, plain HTTP requests, pod bodies."""

from __future__ import annotations

import http.client
import json
from typing import Any

from k8s_backend.conf.model import ApiClientConf
from k8s_backend.kube.client import OfficialKubernetesApi
from k8s_backend.kube.retry import RetryPolicy
from k8s_backend.local.apiserver import ApiServer

TOKEN = "test-token"


def make_api(server: ApiServer, sleeps: list[float], token: str = TOKEN) -> OfficialKubernetesApi:
    """The official-client adapter for ``server``; retry waits are recorded in ``sleeps``, not slept."""
    conf = ApiClientConf(master=server.url, oauth_token=token, request_timeout=10.0, connection_timeout=5.0)
    return OfficialKubernetesApi.from_conf(
        conf,
        namespace_default="default",
        retry=RetryPolicy(sleep=sleeps.append, jitter=0.0),
        environ={"HOME": "/nonexistent"},
    )


class Raw:
    """Plain HTTP requests to the server, for what the adapter does not send (PUT, discovery...)."""

    def __init__(self, url: str, token: str | None = TOKEN) -> None:
        self.host, port = url.removeprefix("http://").split(":")
        self.port = int(port)
        self.token = token

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, dict[str, str], Any]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=10)
        headers = {"Content-Type": content_type}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None if body is None else json.dumps(body).encode()
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            raw = response.read()
            parsed = json.loads(raw) if response.getheader("Content-Type") == "application/json" else raw
            return response.status, {k.lower(): v for k, v in response.getheaders()}, parsed
        finally:
            connection.close()


def pod(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {"containers": [{"name": "main", "image": "spark:4.3"}]},
    }
