"""How to reach the API server: the settings the official-client adapter is built from.

They live with the adapter, at the bottom of the layering, so that the Kubernetes side never imports the
configuration package; :mod:`k8s_backend.conf` reads them from Spark properties
(``spark.kubernetes.authenticate.*``, the client timeouts, the kubeconfig context).
"""

from __future__ import annotations

import attrs


@attrs.frozen
class ApiClientConf:
    """How to reach the API server (``spark.kubernetes.authenticate.*``, timeouts, context)."""

    master: str = ""  # API server URL; "" means kubeconfig or in-cluster
    context: str = ""
    kubeconfig: str = ""  # a kubeconfig file; "" means $KUBECONFIG, else ~/.kube/config
    qps: float = 200.0  # client-side rate limit (k8s_backend.kube.rate_limit); 0: none
    burst: int = 1000
    trust_certificates: bool = False
    request_timeout: float = 10.0
    connection_timeout: float = 10.0
    oauth_token: str = attrs.field(default="", repr=lambda token: "'*********(redacted)'" if token else "''")
    oauth_token_file: str = ""
    ca_cert_file: str = ""
    client_key_file: str = ""
    client_cert_file: str = ""
