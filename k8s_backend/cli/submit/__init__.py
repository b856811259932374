"""``k8s-backend submit``: spark-submit's arguments turned into a checked submission, run as a client-mode
driver in this process or as a cluster-mode driver pod (with its Service, ConfigMap, Secret and uploads)."""
