"""Names and fixed values Spark puts on executor pods (labels, env vars, volumes, ports).

Other parts of k8s_backend (allocator, lifecycle manager, snapshot sources) import these, so a label
selector and the pod that should match it can never disagree.
"""

from __future__ import annotations

from k8s_backend.conf.model import DEFAULT_CONTAINER_NAME, DEFAULT_PROFILE_ID, SPARK_CONF_DIR_IN_POD
from k8s_backend.kube.labels import (  # the labels live with the selectors that match them
    DRIVER_ROLE as DRIVER_ROLE,
)
from k8s_backend.kube.labels import (
    EXECUTOR_ROLE as EXECUTOR_ROLE,
)
from k8s_backend.kube.labels import (
    SPARK_APP_ID_LABEL as SPARK_APP_ID_LABEL,
)
from k8s_backend.kube.labels import (
    SPARK_APP_NAME_LABEL as SPARK_APP_NAME_LABEL,
)
from k8s_backend.kube.labels import (
    SPARK_EXECUTOR_ID_LABEL as SPARK_EXECUTOR_ID_LABEL,
)
from k8s_backend.kube.labels import (
    SPARK_EXECUTOR_INACTIVE_LABEL as SPARK_EXECUTOR_INACTIVE_LABEL,
)
from k8s_backend.kube.labels import (
    SPARK_RESOURCE_PROFILE_ID_LABEL as SPARK_RESOURCE_PROFILE_ID_LABEL,
)
from k8s_backend.kube.labels import (
    SPARK_ROLE_LABEL as SPARK_ROLE_LABEL,
)
from k8s_backend.kube.labels import (
    SPARK_VERSION_LABEL as SPARK_VERSION_LABEL,
)

# Annotations.
POD_DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"

# Placeholders substituted in label/annotation values and in spark.executor.extraJavaOptions.
APP_ID_PLACEHOLDER = "{{APP_ID}}"
EXECUTOR_ID_PLACEHOLDER = "{{EXECUTOR_ID}}"

# Environment variables read by the official image's entrypoint.sh and by the executor process.
ENV_SPARK_USER = "SPARK_USER"
ENV_DRIVER_URL = "SPARK_DRIVER_URL"
ENV_EXECUTOR_CORES = "SPARK_EXECUTOR_CORES"
ENV_EXECUTOR_MEMORY = "SPARK_EXECUTOR_MEMORY"
ENV_APPLICATION_ID = "SPARK_APPLICATION_ID"
ENV_SPARK_CONF_DIR = "SPARK_CONF_DIR"
ENV_EXECUTOR_ID = "SPARK_EXECUTOR_ID"
ENV_RESOURCE_PROFILE_ID = "SPARK_RESOURCE_PROFILE_ID"
ENV_EXECUTOR_ATTRIBUTE_APP_ID = "SPARK_EXECUTOR_ATTRIBUTE_APP_ID"
ENV_EXECUTOR_ATTRIBUTE_EXECUTOR_ID = "SPARK_EXECUTOR_ATTRIBUTE_EXECUTOR_ID"
ENV_AUTH_SECRET = "_SPARK_AUTH_SECRET"
ENV_CLASSPATH = "SPARK_CLASSPATH"
ENV_JAVA_OPT_PREFIX = "SPARK_JAVA_OPT_"
ENV_EXECUTOR_POD_IP = "SPARK_EXECUTOR_POD_IP"
ENV_EXECUTOR_POD_NAME = "SPARK_EXECUTOR_POD_NAME"
ENV_EXECUTOR_DIRS = "SPARK_EXECUTOR_DIRS"
ENV_LOCAL_DIRS = "SPARK_LOCAL_DIRS"
ENV_HADOOP_CONF_DIR = "HADOOP_CONF_DIR"

# Container.
EXECUTOR_CONTAINER_NAME = DEFAULT_CONTAINER_NAME
EXECUTOR_ARG = "executor"
BLOCK_MANAGER_PORT_NAME = "blockmanager"
DEFAULT_BLOCK_MANAGER_PORT = 7079
DEFAULT_DRIVER_PORT = 7078
DEFAULT_DECOMMISSION_SCRIPT = "/opt/decom.sh"
DEFAULT_RESOURCE_PROFILE_ID = DEFAULT_PROFILE_ID

# Volumes.
SPARK_CONF_VOLUME_EXEC = "spark-conf-volume-exec"
SPARK_CONF_DIR_INTERNAL = SPARK_CONF_DIR_IN_POD
SPARK_CONF_FILE_NAME = "spark.properties"
CONF_FILE_MODE = 0o644
HADOOP_CONF_VOLUME = "hadoop-properties"
HADOOP_CONF_DIR_PATH = "/opt/hadoop/conf"
LOCAL_DIR_VOLUME_PREFIX = "spark-local-dir-"
DEFAULT_LOCAL_DIR_PARENT = "/var/data"

# Persistent volume claims.
PVC_ON_DEMAND = "OnDemand"
PVC_POSTFIX = "-pvc"
PVC_ACCESS_MODE = "ReadWriteOncePod"
LEGACY_PVC_ACCESS_MODE = "ReadWriteOnce"
CLAIM_EXECUTOR_ID_PLACEHOLDER = ENV_EXECUTOR_ID  # the literal SPARK_EXECUTOR_ID in a claimName

# Name limits (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/).
DNS_LABEL_MAX_LENGTH = 63
DNS_SUBDOMAIN_MAX_LENGTH = 253
POD_NAME_PREFIX_MAX_LENGTH = 237  # leaves room for "-exec-" and a 10-digit executor id
CONFIG_MAP_NAME_SUFFIX = "-conf-map"
