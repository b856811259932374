"""k8s_backend.cli."""
