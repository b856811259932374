"""Keys table, application and driver part: names, the driver executors talk to, the API client."""

from __future__ import annotations

from k8s_backend.conf.spec import (
    DNS_LABEL,
    DNS_SUBDOMAIN,
    Key,
    Kind,
    at_least,
    between,
    greater_than,
    not_empty,
)

APP_KEYS: tuple[Key, ...] = (
    Key(
        "spark.kubernetes.namespace",
        Kind.STRING,
        "default",
        "Namespace of executor pods, config maps, PVCs and services.",
        field="namespace",
        check=DNS_LABEL,
    ),
    Key(
        "spark.app.name",
        Kind.STRING,
        "spark",
        "Application name; the default executor pod name prefix is derived from it.",
        field="app_name",
        has_spark_entry=False,
    ),
    Key(
        "spark.app.id",
        Kind.STRING,
        None,
        "Application id (`spark-app-selector` label); set by Spark when the context starts.",
        field="app_id",
        check=not_empty(),
        has_spark_entry=False,
    ),
)

DRIVER_KEYS: tuple[Key, ...] = (
    Key(
        "spark.kubernetes.driver.pod.name",
        Kind.STRING,
        None,
        "Driver pod (when the driver runs in the cluster): readiness wait, owner of executor pods and PVCs.",
        field="driver.pod_name",
        check=DNS_SUBDOMAIN,
    ),
    Key(
        "spark.driver.host",
        Kind.STRING,
        None,
        "Host executors connect to (`spark://CoarseGrainedScheduler@host:port`).",
        field="driver.host",
        spark_default="*",
        spark_default_reason="Spark's default is the local host name, which depends on the machine",
    ),
    Key(
        "spark.driver.port",
        Kind.INT,
        "7078",
        "Driver RPC port executors connect to.",
        field="driver.port",
        check=between(0, 65535),
        spark_default="0",
        spark_default_reason="Spark's executor pod builder uses 7078 when unset "
        "(Constants.DEFAULT_DRIVER_PORT)",
    ),
    Key(
        "spark.kubernetes.driver.ownPersistentVolumeClaim",
        Kind.BOOL,
        "true",
        "The driver pod owns on-demand PVCs (kept across executors, deleted at stop).",
        field="driver.own_pvc",
    ),
    Key(
        "spark.kubernetes.driver.reusePersistentVolumeClaim",
        Kind.BOOL,
        "true",
        "Reuse unused driver-owned PVCs for new executors.",
        field="driver.reuse_pvc",
    ),
    Key(
        "spark.kubernetes.driver.waitToReusePersistentVolumeClaim",
        Kind.BOOL,
        "false",
        "Create no new executor once as many PVCs as executors exist and none is free.",
        field="driver.wait_to_reuse_pvc",
    ),
    Key(
        "spark.kubernetes.driver.service.deleteOnTermination",
        Kind.BOOL,
        "true",
        "Delete the application's services at stop.",
        field="driver.delete_service_on_termination",
    ),
    Key(
        "spark.kubernetes.authenticate.driver.serviceAccountName",
        Kind.STRING,
        None,
        "Driver service account; also the executors' when theirs is unset.",
        field="driver.service_account",
        check=DNS_SUBDOMAIN,
    ),
    Key(
        "spark.kubernetes.driver.heartbeat.enabled",
        Kind.BOOL,
        "true",
        "A client-mode driver keeps a heartbeat Lease (`<app-id>-driver-heartbeat`) that executor pods "
        "name, so `k8s-backend gc` can delete what a dead driver left. Unless executors are kept at stop, "
        "the Lease owns their ConfigMap, and the pods the backend creates itself (the default direct "
        "allocator): its delete at stop has the garbage collector take what stop() could not delete in "
        "time.",
        field="driver.heartbeat_enabled",
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.driver.classDataSharing",
        Kind.BOOL,
        "true",
        "A driver JVM that k8s_backend starts (a `pyk8s://` session, `k8s-backend submit` in client mode) "
        "maps Spark's classes from a class data sharing archive instead of loading them from its jars: "
        "a third less CPU and 1.5 s less to start here. The first such JVM for a Java and a Spark install "
        "records the archive in the cache folder (about 150 MB) as it exits, which makes that exit some "
        "seconds longer, once. Off when the JVM is given a class data sharing option of its own "
        "(`-Xshare`, `-XX:SharedArchiveFile`, ...).",
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.driver.heartbeat.leaseDuration",
        Kind.DURATION_S,
        "60s",
        "How long the heartbeat Lease lasts without renewal (renewed every third of it). A cluster-mode "
        "driver writes its registered executors on its pod at most once per third of it too.",
        field="driver.heartbeat_lease_duration",
        check=at_least(3, "must be at least 3s"),
        has_spark_entry=False,
    ),
)

_TIMEOUT = greater_than(0, "must be a positive time value")

API_KEYS: tuple[Key, ...] = (
    Key(
        "spark.master",
        Kind.STRING,
        None,
        "`pyk8s://<url>` or `k8s://<url>`: the API server URL after the scheme prefix; `pyk8s://` "
        "alone: kubeconfig or in-cluster; `pyk8s://local`: the embedded local cluster.",
        field="api.master",
        custom=True,
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.driver.master",
        Kind.STRING,
        None,
        "API server URL; wins over spark.master when set.",
        field="api.master",
        custom=True,
        spark_default="https://kubernetes.default.svc",
        spark_default_reason="unset means kubeconfig or in-cluster configuration, which inside a pod "
        "reaches the same in-cluster API server",
    ),
    Key(
        "spark.kubernetes.context",
        Kind.STRING,
        None,
        "Kubeconfig context to use (default: the current one).",
        field="api.context",
        check=not_empty(),
    ),
    Key(
        "spark.kubernetes.kubeconfig",
        Kind.STRING,
        None,
        "Kubeconfig file to use instead of `$KUBECONFIG` (else `~/.kube/config`); "
        "`k8s-backend --kubeconfig`. Not passed to a cluster-mode driver.",
        field="api.kubeconfig",
        check=not_empty(),
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.trust.certificates",
        Kind.BOOL,
        "false",
        "Skip TLS verification of the API server.",
        field="api.trust_certificates",
    ),
    Key(
        "spark.kubernetes.driver.requestTimeout",
        Kind.DURATION_MS,
        "10000",
        "API request timeout (a plain number is milliseconds).",
        field="api.request_timeout",
        check=_TIMEOUT,
    ),
    Key(
        "spark.kubernetes.driver.connectionTimeout",
        Kind.DURATION_MS,
        "10000",
        "API connection timeout (a plain number is milliseconds).",
        field="api.connection_timeout",
        check=_TIMEOUT,
    ),
    Key(
        "spark.kubernetes.client.qps",
        Kind.FLOAT,
        "200",
        "API requests a second this process sends, at most (a token bucket shared by every backend "
        "of the process with the same settings; 0: no limit). Far above the default allocation rate.",
        field="api.qps",
        check=at_least(0, "must be 0 (no limit) or a positive number of requests a second"),
        has_spark_entry=False,
    ),
    Key(
        "spark.kubernetes.client.burst",
        Kind.INT,
        "1000",
        "Requests sent at once before `spark.kubernetes.client.qps` applies (the bucket's size): an "
        "adaptive ramp to 1000 executors is not slowed, a longer one is held to the QPS.",
        field="api.burst",
        check=at_least(1, "must be at least 1"),
        has_spark_entry=False,
    ),
)

# Credentials: Spark reads one family per mode. k8s_backend takes the first family with any key set,
# in this order, and reads all five values from it.
AUTH_PREFIXES: tuple[str, ...] = (
    "spark.kubernetes.authenticate.driver.mounted.",
    "spark.kubernetes.authenticate.",
    "spark.kubernetes.authenticate.driver.",
    "spark.kubernetes.authenticate.submission.",
)
_AUTH_FAMILY_DOC = {
    AUTH_PREFIXES[0]: "cluster-mode driver (files mounted into the driver pod)",
    AUTH_PREFIXES[1]: "client-mode driver",
    AUTH_PREFIXES[2]: (
        "credentials given for the driver at submission (in cluster mode the files are read on the "
        "submitting machine, shipped in the driver's Secret and named by driver.mounted.*)"
    ),
    AUTH_PREFIXES[3]: "spark-submit's own",
}
AUTH_SUFFIXES: dict[str, tuple[str, str]] = {
    "oauthToken": ("oauth_token", "Bearer token"),
    "oauthTokenFile": ("oauth_token_file", "File holding a bearer token (re-read when it changes)"),
    "caCertFile": ("ca_cert_file", "CA certificate of the API server"),
    "clientKeyFile": ("client_key_file", "Client TLS key"),
    "clientCertFile": ("client_cert_file", "Client TLS certificate"),
}

AUTH_KEYS: tuple[Key, ...] = tuple(
    Key(
        prefix + suffix,
        Kind.STRING,
        None,
        f"{doc}; {_AUTH_FAMILY_DOC[prefix]}. The first family with any key set, in the order "
        "driver.mounted, client mode, driver, submission, gives all credentials.",
        field=f"api.{field}",
        check=not_empty(),
        custom=True,
        has_spark_entry=False,
    )
    for prefix in AUTH_PREFIXES
    for suffix, (field, doc) in AUTH_SUFFIXES.items()
)
