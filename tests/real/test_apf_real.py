"""API Priority and Fairness on the real kube-apiserver: a FlowSchema puts the driver's ServiceAccount in a
priority level of 2 seats that rejects (429, ``Retry-After: 1``) whatever does not fit, as a busy cluster
does. Adaptive allocation, authenticated with nothing but a token of that account and
examples/kubernetes/driver-rbac.yaml's Role, still creates exactly N executor pods, with a bounded share
of 429s, and tells once which FlowSchema and priority level throttled it.

No node is registered: the pods stay Pending (the allocator counts Pending pods as allocated), so the
test measures the API traffic alone.
"""

from __future__ import annotations

import http.client
import logging
import re
import ssl
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from backend_real_support import DRIVER_URL, RBAC_FILE, REST_PATHS, backend_conf, sleeper_template, until

from k8s_backend import KubernetesClusterSchedulerBackend, KubernetesConf
from k8s_backend.allocation.adaptive import CAP_HOLD
from k8s_backend.kube.client import OfficialKubernetesApi
from k8s_backend.kube.flow_control import FLOW_SCHEMA_HEADER
from k8s_backend.kube.port import PODS
from k8s_backend.local.control_plane import ControlPlane

pytestmark = [pytest.mark.real, pytest.mark.timeout(1200)]

NS = "apf"
PODS_N = 100
LEVEL, SCHEMA = "spark-drivers-tight", "spark-drivers"
FLOWCONTROL = "/apis/flowcontrol.apiserver.k8s.io/v1"
SEATS = 2
# A level's seats are ceil(600 * its nominalConcurrencyShares / the sum of every level's shares): the
# built-in levels hold 245 shares, so this one (1 share) would get 3 seats. Other tenants' level, which no
# FlowSchema uses, takes 150 shares more: ceil(600 / 396) = 2 seats for the driver, none lent or borrowed
# (the limit holds whatever the other levels do), and no queue: what does not fit is answered 429 at once.
OTHER_TENANTS = {
    "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
    "kind": "PriorityLevelConfiguration",
    "metadata": {"name": "other-tenants"},
    "spec": {
        "type": "Limited",
        "limited": {"nominalConcurrencyShares": 150, "limitResponse": {"type": "Reject"}},
    },
}
PRIORITY_LEVEL = {
    "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
    "kind": "PriorityLevelConfiguration",
    "metadata": {"name": LEVEL},
    "spec": {
        "type": "Limited",
        "limited": {
            "nominalConcurrencyShares": 1,
            "lendablePercent": 0,
            "borrowingLimitPercent": 0,
            "limitResponse": {"type": "Reject"},
        },
    },
}
FLOW_SCHEMA = {
    "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
    "kind": "FlowSchema",
    "metadata": {"name": SCHEMA},
    "spec": {
        "priorityLevelConfiguration": {"name": LEVEL},
        "matchingPrecedence": 100,  # before the built-in service-accounts schema (9000)
        "distinguisherMethod": {"type": "ByUser"},
        "rules": [
            {
                "subjects": [
                    {"kind": "ServiceAccount", "serviceAccount": {"name": "spark-driver", "namespace": NS}}
                ],
                "resourceRules": [
                    {
                        "verbs": ["*"],
                        "apiGroups": ["*"],
                        "resources": ["*"],
                        "namespaces": ["*"],
                        "clusterScope": True,
                    }
                ],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            }
        ],
    },
}
THROTTLED_SHARE_BOUND = 0.25
"""At most this share of the creates sent is answered 429 (measured here: 1-5 %). Why it holds: a round
stops sending at its first refusal, so one episode of congestion costs about the creates then in flight
(8 at most, 2 of which fit the level's seats); each episode of APF refusals halves the creates in flight
for the rest of the run (8, 4, 2, 1), and at one in flight a refusal halves the batch and paces the rounds.
100 pods take a handful of such episodes: each would have to lose tens of creates to pass a quarter."""


def request(cp: ControlPlane, method: str, path: str, token: str) -> tuple[int, dict[str, str], bytes]:
    """One HTTPS request with ``token``: the status, the headers and the body."""
    host, port = cp.url.removeprefix("https://").rsplit(":", 1)
    context = ssl.create_default_context(cafile=cp.ca_file)
    connection = http.client.HTTPSConnection(host, int(port), context=context, timeout=30)
    try:
        connection.request(method, path, headers={"Authorization": f"Bearer {token}"})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def created(cp: ControlPlane, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, answer = cp.request("POST", path, body=body)
    assert code == 201, answer
    return dict(answer)


def apf_metric(cp: ControlPlane, name: str) -> int:
    """An apiserver_flowcontrol_* metric of the tight priority level, summed over its other labels."""
    code, text = cp.request("GET", "/metrics")
    assert code == 200, text
    pattern = re.compile(
        rf'^apiserver_flowcontrol_{name}{{[^}}]*priority_level="{LEVEL}"[^}}]*}} (\S+)$', re.M
    )
    return sum(int(float(value)) for value in pattern.findall(text))


@pytest.fixture(scope="module")
def driver_token(cp: ControlPlane) -> tuple[str, str]:
    """The namespace, driver-rbac.yaml in it, the tight level and its FlowSchema; a token of the driver's
    account and the FlowSchema's UID, once the server classifies that account's requests by it."""
    created(cp, "/api/v1/namespaces", {"metadata": {"name": NS}})
    until(lambda: cp.request("GET", f"/api/v1/namespaces/{NS}/serviceaccounts/default")[0] == 200,
          "the namespace's default ServiceAccount")  # fmt: skip
    for document in yaml.safe_load_all(RBAC_FILE.read_text(encoding="utf-8")):
        created(cp, REST_PATHS[document["kind"]].format(ns=NS), document)
    created(cp, f"{FLOWCONTROL}/prioritylevelconfigurations", OTHER_TENANTS)
    created(cp, f"{FLOWCONTROL}/prioritylevelconfigurations", PRIORITY_LEVEL)
    schema_uid = str(created(cp, f"{FLOWCONTROL}/flowschemas", FLOW_SCHEMA)["metadata"]["uid"])
    token_request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                     "spec": {"expirationSeconds": 3600}}  # fmt: skip
    token = created(cp, f"/api/v1/namespaces/{NS}/serviceaccounts/spark-driver/token", token_request)
    token_value = str(token["status"]["token"])

    def classified() -> bool:
        code, headers, _ = request(cp, "GET", f"/api/v1/namespaces/{NS}/pods?limit=1", token_value)
        return (
            code == 200
            and {k.lower(): v for k, v in headers.items()}.get(FLOW_SCHEMA_HEADER.lower()) == schema_uid
        )

    until(classified, "the driver's requests run in the tight priority level")
    until(lambda: apf_metric(cp, "nominal_limit_seats") == SEATS, f"{SEATS} seats for the tight level")
    return token_value, schema_uid


def test_adaptive_allocation_under_apf_creates_exactly_n_pods_with_few_429s(
    cp: ControlPlane, driver_token: tuple[str, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    token, schema_uid = driver_token
    app = "spark-apf"
    props = {
        **backend_conf(app, PODS_N, sleeper_template(tmp_path)),
        "spark.kubernetes.allocation.batch.adaptive": "true",
        "spark.kubernetes.allocation.batch.size": "10",
        "spark.kubernetes.namespace": NS,
        "spark.kubernetes.authenticate.oauthToken": token,
        "spark.kubernetes.authenticate.caCertFile": cp.ca_file,
        "spark.master": f"pyk8s://{cp.url}",
    }
    conf = KubernetesConf.from_spark_conf(props)
    # An environment without any kubeconfig or service account: the token is the only credential.
    api = OfficialKubernetesApi.from_conf(conf.api, namespace_default=NS, environ={"HOME": str(tmp_path)})
    admin = cp.api(NS)
    selector = f"spark-app-selector={app},spark-role=executor"
    rejected_before = apf_metric(cp, "rejected_requests_total")
    backend = KubernetesClusterSchedulerBackend.create(props, app_id=app, driver_url=DRIVER_URL, api=api)
    with caplog.at_level(logging.WARNING, logger="k8s_backend"):
        started = time.monotonic()
        backend.start()
        try:

            def converged() -> bool:
                allocator = backend.status()["allocator"]
                done = allocator["executor_id_counter"] == PODS_N and not allocator["newly_created"]
                return done and len(admin.list(PODS, NS, label_selector=selector).items) == PODS_N

            until(converged, f"{PODS_N} executor pods created", timeout=600)
            pods = admin.list(PODS, NS, label_selector=selector).items
            allocator = backend.status()["allocator"]
            elapsed = time.monotonic() - started
        finally:
            backend.stop()
    until(lambda: admin.list(PODS, NS, label_selector=selector).items == [], "no pod left after stop()")
    api.close()
    # Exactly N, one per executor id: no over-allocation (a refused create is asked again under its id).
    ids = sorted(int(p["metadata"]["labels"]["spark-exec-id"]) for p in pods)
    assert ids == list(range(1, PODS_N + 1))
    throttled = allocator["batches"]["throttled"]
    rejected = apf_metric(cp, "rejected_requests_total") - rejected_before
    share = throttled / (PODS_N + throttled)
    print(f"APF: {throttled} creates answered 429 of {PODS_N + throttled} ({share:.1%}); the level rejected "
          f"{rejected} requests; batches {allocator['batches']}")  # fmt: skip
    # APF did throttle, and the backend saw it: every 429 of a create is one the level rejected.
    assert throttled > 0 and rejected >= throttled, (throttled, rejected)
    assert share <= THROTTLED_SHARE_BOUND, allocator["batches"]
    # The answer to APF's 429 is fewer creates in flight (a cap under the 8 of automatic concurrency). It
    # grows back by one every CAP_HOLD seconds of rounds that went well: only a run that lasted four of
    # them (a very busy machine) can have none left.
    cap = allocator["batches"]["concurrency_cap"]
    assert 1 <= cap < 8 or (cap == 0 and elapsed >= 4 * CAP_HOLD), (elapsed, allocator["batches"])
    assert allocator["failures"] == 0 and not allocator["application_failed"]
    # Told once, naming the FlowSchema by UID: driver-rbac.yaml does not let the driver read flowschemas.
    told = [r.getMessage() for r in caplog.records if "API Priority and Fairness throttles" in r.getMessage()]
    assert len(told) == 1 and f"FlowSchema uid {schema_uid}" in told[0], told
    assert allocator["throttled_by"]["flow_schema"] == {"uid": schema_uid, "name": None}
