"""What an in-cluster client sees in a process-kubelet "pod": the ``kubernetes`` Service's variables
(the API server's address on this host, on a real control plane) and the service-account mount's local
directory, which k8s_backend's in-cluster configuration then uses (pure; no cluster)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from test_kubelet_container import CONFIG_MAPS, executor_pod, host, translate_pod  # noqa: F401

from k8s_backend.kube.config import build_client_settings
from k8s_backend.kube.incluster import SERVICE_ACCOUNT_DIR, SERVICE_ACCOUNT_DIR_ENV
from k8s_backend.kube.settings import ApiClientConf
from k8s_backend.local.kubelet.container import HostEnvironment

Obj = dict[str, Any]
TOKEN = "a-projected-token"


def with_service_account(pod: Obj) -> Obj:
    """The pod as ServiceAccount admission leaves it: a projected token volume at the fixed path."""
    pod = copy.deepcopy(pod)
    pod["spec"]["volumes"].append(
        {
            "name": "kube-api-access-x1",
            "projected": {
                "sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                    {
                        "configMap": {
                            "name": "kube-root-ca.crt",
                            "items": [{"key": "ca.crt", "path": "ca.crt"}],
                        }
                    },
                ]
            },
        }
    )
    pod["spec"]["containers"][0]["volumeMounts"].append(
        {"name": "kube-api-access-x1", "mountPath": SERVICE_ACCOUNT_DIR, "readOnly": True}
    )
    return pod


def test_the_service_account_mount_is_named_to_the_process(host: HostEnvironment, tmp_path: Path) -> None:  # noqa: F811
    objects = {**CONFIG_MAPS, ("ConfigMap", "kube-root-ca.crt"): {"data": {"ca.crt": "PEM"}}}
    command = translate_pod(with_service_account(executor_pod()), host, tmp_path, objects)
    local = Path(command.env[SERVICE_ACCOUNT_DIR_ENV])
    assert local.is_relative_to(tmp_path / "pod")
    assert (local / "ca.crt").read_text() == "PEM"
    # Without the mount, nothing names a directory (not even one inherited from the kubelet's own env).
    leaky = HostEnvironment(
        host.spark_home, host.java, host.python, {**host.base_env, SERVICE_ACCOUNT_DIR_ENV: "/x"}
    )
    assert SERVICE_ACCOUNT_DIR_ENV not in translate_pod(executor_pod(), leaky, tmp_path / "b").env


def test_a_real_control_planes_kubelet_names_the_api_server_as_the_kubernetes_service(
    host: HostEnvironment,  # noqa: F811
    tmp_path: Path,
) -> None:
    command = translate_pod(executor_pod(), host.with_api_service("127.0.0.1", 36443), tmp_path)
    assert command.env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    assert command.env["KUBERNETES_SERVICE_PORT"] == "36443"
    assert command.env["KUBERNETES_PORT"] == "tcp://127.0.0.1:36443"
    assert "KUBERNETES_SERVICE_HOST" not in host.base_env  # a new environment; the original is unchanged


def test_the_driver_master_default_reaches_the_service_address_with_the_pods_token(tmp_path: Path) -> None:
    sa = tmp_path / "pod" / "volumes" / "kube-api-access-x1"
    sa.mkdir(parents=True)
    (sa / "token").write_text(TOKEN)
    (sa / "ca.crt").write_text("PEM")
    env = {
        "HOME": str(tmp_path / "home"),
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": "36443",
        SERVICE_ACCOUNT_DIR_ENV: str(sa),
    }
    # Spark's default driver master: no cluster DNS here, so the Service's address is used.
    conf = ApiClientConf(master="k8s://https://kubernetes.default.svc")
    settings = build_client_settings(conf, environ=env)
    cfg = settings.configuration
    assert cfg.host == "https://127.0.0.1:36443"
    assert cfg.ssl_ca_cert == str(sa / "ca.crt")
    assert cfg.auth_settings()["BearerToken"]["value"].lower() == f"bearer {TOKEN}"
    assert str(sa) in settings.source
    # Any other URL is used as given, with the same token.
    other = build_client_settings(ApiClientConf(master="k8s://https://127.0.0.1:36443"), environ=env)
    assert other.configuration.host == "https://127.0.0.1:36443"
    # Outside a process-kubelet pod the service name stays what Spark gives (the cluster's DNS serves it).
    real_pod = {k: v for k, v in env.items() if k != SERVICE_ACCOUNT_DIR_ENV}
    inside = build_client_settings(conf, environ=real_pod, service_account_dir=str(sa)).configuration
    assert inside.host == "https://kubernetes.default.svc"
