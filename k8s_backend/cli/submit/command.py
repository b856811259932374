"""``k8s-backend submit``: spark-submit's command line, run with k8s_backend's backend."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from k8s_backend.cli.apps.commands import kill_command, status_command
from k8s_backend.cli.common.deps import Dependencies, version
from k8s_backend.cli.common.errors import UsageError
from k8s_backend.cli.common.submit_args import SubmitArgs, parse_submit_args
from k8s_backend.cli.submit.client_mode import run_client
from k8s_backend.cli.submit.cluster_mode import run_cluster
from k8s_backend.cli.submit.submission import Submission, build_submission
from k8s_backend.conf.model import redacted

USAGE = """\
Usage: k8s-backend submit [options] <app.py> [app arguments]
       k8s-backend submit --kill [NAMESPACE:]DRIVER_POD | --status [NAMESPACE:]DRIVER_POD

Runs a Python Spark application with k8s_backend managing its executors on Kubernetes. Options are
spark-submit's, written --name value or --name=value:

  --master MASTER          pyk8s://https://HOST:PORT (k8s://... is accepted), pyk8s:// for your
                           kubeconfig or in-cluster account (the default), or pyk8s://local for a
                           local cluster that lives as long as the command
  --deploy-mode MODE       client (default): the driver runs in this process;
                           cluster: the driver runs in a pod created from the configured image
  --name NAME              application name (default: the file name)
  --conf, -c KEY=VALUE     a Spark property (repeatable)
  --properties-file FILE   properties to load (default: spark-defaults.conf in $SPARK_CONF_DIR,
                           else $SPARK_HOME/conf)
  --load-spark-defaults    also load spark-defaults.conf when --properties-file is given
  --py-files FILES         comma-separated .py/.zip/.egg files for the PYTHONPATH (shipped to executors)
  --files FILES            comma-separated files placed in each executor's working directory
  --archives, --jars, --packages, --exclude-packages, --repositories   as spark-submit
  --num-executors N        spark.executor.instances
  --executor-memory MEM    spark.executor.memory, e.g. 2g
  --executor-cores N       spark.executor.cores
  --driver-memory MEM      spark.driver.memory (and the driver pod's memory in cluster mode)
  --driver-cores N         spark.driver.cores (the driver pod's CPU in cluster mode)
  --driver-java-options, --driver-class-path, --driver-library-path   as spark-submit
  --verbose, -v            print the arguments and the resolved properties, and k8s_backend's log
                           from INFO (-v -v: DEBUG); before the application file only
  --kill ID, --status ID   stop / show an application (see `k8s-backend kill --help`)

k8s-backend options:
  --namespace, -n NS       spark.kubernetes.namespace, as the other commands take it
  --kubeconfig FILE        the kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config)
  --context NAME           its context (default: the current one)
  --follow-log             cluster mode: print the driver's log while waiting
  --driver-command CMD     cluster mode: how the driver container starts k8s-backend
                           (default: k8s-backend; e.g. 'python3 -m k8s_backend.cli.main')

Cluster mode waits for the application and exits with the driver's exit code unless
spark.kubernetes.submission.waitAppCompletion=false. Bad input exits with code 2 and creates nothing.
"""


def redact(properties: dict[str, str]) -> dict[str, str]:
    """Properties with secret-looking values hidden (Spark's redaction rule, and every key that looks like
    a credential's: :func:`k8s_backend.conf.model.redacted`)."""
    return redacted(properties)


def print_verbose(args: SubmitArgs, sub: Submission, deps: Dependencies) -> None:
    console = deps.console
    console.info("Parsed arguments:")
    for flag, value in sorted(args.flags.items()):
        console.info(f"  {flag:<24}{value}")
    console.info(f"  {'application':<24}{sub.app}")
    console.info(f"  {'arguments':<24}{' '.join(sub.app_args) or '(none)'}")
    console.info(f"  {'properties files':<24}{', '.join(sub.files_read) or '(none)'}")
    console.info("Spark properties used, including those from --conf and the properties file:")
    for key, value in sorted(redact(dict(sub.properties)).items()):
        console.info(f"  ({key},{value})")


def submit_command(argv: Sequence[str], deps: Dependencies) -> int:
    """Run ``k8s-backend submit ARGV``; returns the exit code."""
    args = parse_submit_args(argv)
    if args.has("--help"):
        deps.console.result(USAGE)
        return 0
    if args.has("--version"):
        deps.console.result(f"k8s-backend {version()}")
        return 0
    if args.kill is not None or args.status is not None:
        if args.kill is not None and args.status is not None:
            raise UsageError("--kill and --status cannot be used together")
        options = argparse.Namespace(
            master=args.flags.get("--master"),
            namespace=args.flags.get("--namespace"),
            kubeconfig=args.flags.get("--kubeconfig"),
            context=args.flags.get("--context"),
            conf=[f"{k}={v}" for k, v in args.conf],
            properties_file=args.properties_file,
            selector="",
            ids=[args.kill if args.kill is not None else args.status],
            grace_period=None,
            no_wait=True,
            timeout=60.0,
            output="table",
            watch=False,
            timeline=None,
        )
        return kill_command(options, deps) if args.kill is not None else status_command(options, deps)
    sub = build_submission(args, deps.environ)
    for warning in sub.warnings:
        deps.console.warning(warning)
    if sub.verbose:
        print_verbose(args, sub, deps)
    if sub.deploy_mode == "cluster":
        return run_cluster(
            sub, deps.console, connect=deps.connect, local_cluster=deps.local_cluster, environ=deps.environ
        )
    return run_client(
        sub, deps.console, runtime=deps.runtime, connect=deps.connect, verbose=sub.verbose
    )
