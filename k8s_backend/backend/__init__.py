"""The scheduler backend's own parts (Spark's scheduler/cluster/k8s): the hooks a driver calls over parts it
is given, the backend's life states, and the services a driver runs beside its executors (heartbeat Lease,
recovery of a predecessor's pods, the published registrations)."""
