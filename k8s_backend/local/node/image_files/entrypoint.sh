#!/bin/bash
# The Spark image's entrypoint, written for k8s_backend from the contract of apache/spark-docker's
# entrypoint.sh: the same environment names and java command line, run under tini (and gosu when root).
#   driver ARGS...    spark-submit in client mode, bound to $SPARK_DRIVER_BIND_ADDRESS
#   executor          KubernetesExecutorBackend, configured by the SPARK_EXECUTOR_* / SPARK_DRIVER_URL env
#   anything else     run as given (pass-through)
set -eo pipefail

# A uid without a passwd entry (OpenShift's random uids): Java and Hadoop need a user name, so one is
# faked with libnss-wrapper.
fake_passwd_entry_if_missing() {
  local uid gid wrapper
  uid="$(id -u)"
  gid="$(id -g)"
  getent passwd "$uid" > /dev/null 2>&1 && return 0
  for wrapper in /usr/lib/*/libnss_wrapper.so /usr/lib/libnss_wrapper.so /lib/*/libnss_wrapper.so; do
    [ -s "$wrapper" ] || continue
    NSS_WRAPPER_PASSWD="$(mktemp)"
    NSS_WRAPPER_GROUP="$(mktemp)"
    printf 'spark:x:%s:%s:%s:%s:/bin/false\n' "$uid" "$gid" "${SPARK_USER_NAME:-anonymous uid}" "$SPARK_HOME" \
      > "$NSS_WRAPPER_PASSWD"
    printf 'spark:x:%s:\n' "$gid" > "$NSS_WRAPPER_GROUP"
    export LD_PRELOAD="$wrapper" NSS_WRAPPER_PASSWD NSS_WRAPPER_GROUP
    return 0
  done
}

if [ -z "${JAVA_HOME:-}" ]; then
  JAVA_HOME="$(java -XshowSettings:properties -version 2>&1 > /dev/null | awk '/java.home/ {print $3}')"
fi

SPARK_CLASSPATH="${SPARK_CLASSPATH:-}:${SPARK_HOME}/jars/*"
if [ -n "${SPARK_EXTRA_CLASSPATH:-}" ]; then
  SPARK_CLASSPATH="$SPARK_CLASSPATH:$SPARK_EXTRA_CLASSPATH"
fi

# SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ...: the executor's java options, in the order of their index.
SPARK_EXECUTOR_JAVA_OPTS=()
while IFS= read -r name; do
  [ -n "$name" ] && SPARK_EXECUTOR_JAVA_OPTS+=("${!name}")
done < <(compgen -v SPARK_JAVA_OPT_ | sort -t_ -k4 -n)

[ -n "${PYSPARK_PYTHON+x}" ] && export PYSPARK_PYTHON
[ -n "${PYSPARK_DRIVER_PYTHON+x}" ] && export PYSPARK_DRIVER_PYTHON

if [ -n "${HADOOP_HOME:-}" ] && [ -z "${SPARK_DIST_CLASSPATH:-}" ]; then
  SPARK_DIST_CLASSPATH="$("$HADOOP_HOME/bin/hadoop" classpath)"
  export SPARK_DIST_CLASSPATH
fi
if [ -n "${HADOOP_CONF_DIR+x}" ]; then
  SPARK_CLASSPATH="$HADOOP_CONF_DIR:$SPARK_CLASSPATH"
fi
if [ -n "${SPARK_CONF_DIR+x}" ]; then
  SPARK_CLASSPATH="$SPARK_CONF_DIR:$SPARK_CLASSPATH"
elif [ -n "${SPARK_HOME+x}" ]; then
  SPARK_CLASSPATH="$SPARK_HOME/conf:$SPARK_CLASSPATH"
fi
# SPARK-43540: the working directory (where spark.files land) is on the executor's classpath.
SPARK_CLASSPATH="$SPARK_CLASSPATH:$PWD"

# tini as PID 1 forwards signals (SIGTERM on pod deletion) and reaps zombies; -s makes it a subreaper
# should it not be PID 1. gosu drops root to the spark user, as the official image does.
run_under_tini() {
  fake_passwd_entry_if_missing
  if [ "$(id -u)" -eq 0 ]; then
    exec gosu spark /usr/bin/tini -s -- "$@"
  fi
  exec /usr/bin/tini -s -- "$@"
}

case "${1:-}" in
  driver)
    shift
    run_under_tini "$SPARK_HOME/bin/spark-submit" \
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS:-}" \
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=${SPARK_DRIVER_BIND_ADDRESS:-}" \
      --deploy-mode client \
      "$@"
    ;;
  executor)
    shift
    run_under_tini "${JAVA_HOME}/bin/java" \
      "${SPARK_EXECUTOR_JAVA_OPTS[@]}" \
      -Xms"${SPARK_EXECUTOR_MEMORY:-}" -Xmx"${SPARK_EXECUTOR_MEMORY:-}" \
      -cp "$SPARK_CLASSPATH:${SPARK_DIST_CLASSPATH:-}" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "${SPARK_DRIVER_URL:-}" \
      --executor-id "${SPARK_EXECUTOR_ID:-}" \
      --cores "${SPARK_EXECUTOR_CORES:-}" \
      --app-id "${SPARK_APPLICATION_ID:-}" \
      --hostname "${SPARK_EXECUTOR_POD_IP:-}" \
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-}" \
      --podName "${SPARK_EXECUTOR_POD_NAME:-}"
    ;;
  *)
    exec "$@"
    ;;
esac
