"""The old home of LocalCluster, kept so that existing imports work: it lives in :mod:`k8s_backend.local`."""

from k8s_backend.local.cluster import LocalCluster, default_nodes

__all__ = ["LocalCluster", "default_nodes"]
