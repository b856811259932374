#!/bin/bash
# The executor container's preStop hook for graceful decommissioning (Spark's own backend names
# /opt/decom.sh): SIGPWR asks the executor JVM to decommission (migrate its blocks, finish its tasks, then
# exit); the hook waits for that exit, bounded, so pod deletion is not blocked forever.
set -x
echo "Asked to decommission"
date | tee /dev/termination-log
pid="$(pgrep -o -x java || true)"
if [ -z "$pid" ]; then
  echo "No executor JVM to decommission"
  exit 0
fi
echo "Using worker pid $pid"
kill -s SIGPWR "$pid"
echo "Waiting for worker pid to exit"
timeout "${DECOM_TIMEOUT_SECONDS:-60}" tail --pid="$pid" -f /dev/null || echo "Worker $pid still running"
echo "Done"
date | tee /dev/termination-log
