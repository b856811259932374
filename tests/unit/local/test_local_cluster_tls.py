"""``LocalCluster(tls=True)`` (the default of ``k8s-backend local``): https with a CA of the cluster's
own, in the kubeconfig as kubectl and the official client's loaders read it, and in spark_conf()."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from k8s_backend.kube.port import PODS
from k8s_backend.local import LocalCluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(tls=True, run_processes=False) as running:
        yield running


def test_the_server_speaks_https_with_the_clusters_ca(cluster: LocalCluster) -> None:
    assert cluster.url.startswith("https://127.0.0.1:")
    assert cluster.ca_cert is not None and cluster.ca_cert.exists()
    context = ssl.create_default_context(cafile=str(cluster.ca_cert))
    request = urllib.request.Request(
        cluster.url + "/api/v1/namespaces/default/pods", headers={"Authorization": f"Bearer {cluster.token}"}
    )
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        assert response.status == 200
    with pytest.raises(urllib.error.URLError):  # not trusted without the CA
        urllib.request.urlopen(cluster.url + "/healthz", context=ssl.create_default_context(), timeout=30)


def test_the_kubeconfig_works_with_the_official_loader(cluster: LocalCluster) -> None:
    api_client = k8s_config.new_client_from_config(str(cluster.kubeconfig))
    try:
        pods = k8s_client.CoreV1Api(api_client).list_namespaced_pod("default")
        assert pods.items == []
    finally:
        api_client.close()


def test_the_adapter_and_spark_conf_carry_the_ca(cluster: LocalCluster) -> None:
    assert cluster.api().list(PODS, "default").items == []
    conf = cluster.spark_conf()
    assert conf["spark.kubernetes.authenticate.caCertFile"] == str(cluster.ca_cert)
    assert conf["spark.kubernetes.authenticate.submission.caCertFile"] == str(cluster.ca_cert)
    assert conf["spark.master"] == "pyk8s://" + cluster.url


def test_a_session_backend_reaches_it_through_spark_conf(cluster: LocalCluster) -> None:
    from k8s_backend import KubernetesClusterSchedulerBackend, KubernetesConf

    conf = KubernetesConf.from_spark_conf({**cluster.spark_conf(), "spark.executor.instances": "2"})
    assert (conf.api.master, conf.api.ca_cert_file) == (cluster.url, str(cluster.ca_cert))
    backend = KubernetesClusterSchedulerBackend.create(
        conf, app_id="spark-tls", driver_url="spark://CoarseGrainedScheduler@127.0.0.1:7078"
    )
    backend.start()
    try:
        assert cluster.wait_until(lambda: len(cluster.fake.objects(PODS, "default")) == 2, 60)
    finally:
        backend.stop()
    assert cluster.wait_until(lambda: cluster.fake.objects(PODS, "default") == [], 60)
