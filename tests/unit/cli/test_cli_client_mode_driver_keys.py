"""Client mode builds no driver pod: the driver pod keys set for it are named in a warning."""

from __future__ import annotations

from k8s_backend.cli.submit.client_mode import cluster_only_keys


def test_client_mode_tells_which_driver_pod_keys_do_nothing_there() -> None:
    props = {
        "spark.kubernetes.driver.secrets.s": "/s",
        "spark.kubernetes.driver.volumes.emptyDir.x.mount.path": "/x",
        "spark.kubernetes.executor.secrets.s": "/s",
    }
    assert cluster_only_keys(props) == [
        "spark.kubernetes.driver.secrets.s",
        "spark.kubernetes.driver.volumes.emptyDir.x.mount.path",
    ]
    # Inside the cluster-mode driver's pod they were acted on already: nothing to tell.
    assert cluster_only_keys({**props, "spark.kubernetes.submitInDriver": "true"}) == []


def test_the_kerberos_mount_keys_are_cluster_only_too() -> None:
    props = {"spark.kubernetes.kerberos.krb5.configMapName": "krb5", "spark.kerberos.principal": "a@B"}
    # spark.kerberos.* is Spark's own login in either mode: not named.
    assert cluster_only_keys(props) == ["spark.kubernetes.kerberos.krb5.configMapName"]
