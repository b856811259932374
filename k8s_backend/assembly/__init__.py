"""The composition root (Spark's KubernetesClusterManager): the one place that builds the backend's parts
from a configuration and wires them together; the public ``KubernetesClusterSchedulerBackend`` and its
``create``."""
