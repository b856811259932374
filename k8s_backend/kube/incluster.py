"""Where a pod finds the API server and its service account: the facts shared by the client's in-cluster
configuration (:mod:`k8s_backend.kube.config`) and the local process kubelet that provides them.

No imports: the kubelet reads these without loading the official client.
"""

from __future__ import annotations

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
SERVICE_ACCOUNT_DIR_ENV = "K8S_BACKEND_SERVICE_ACCOUNT_DIR"
"""Where the pod's service-account mount is when it is not at :data:`SERVICE_ACCOUNT_DIR`: the local
process kubelet runs "containers" as host processes and sets it to the mount's directory on this host."""
IN_CLUSTER_HOSTS = ("kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
"""The API server's in-cluster service names (Spark's default driver master is the first)."""
