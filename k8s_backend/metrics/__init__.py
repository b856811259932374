"""Prometheus metrics of a backend (``spark.kubernetes.metrics.port``): one registry per backend, served at
``/metrics`` by a small HTTP server the backend starts at start() and stops in its stop sequence.

The only package that imports ``prometheus_client``.
"""

from k8s_backend.metrics.monitoring import BackendMonitoring

__all__ = ["BackendMonitoring"]
