"""k8s_backend.spark."""
