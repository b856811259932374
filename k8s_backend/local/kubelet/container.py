"""What the official Spark image would run for a container, as a local command.

The image's entrypoint (``/opt/entrypoint.sh``) has an ``executor`` branch (a JVM running
``KubernetesExecutorBackend``), a ``driver`` branch (``spark-submit --deploy-mode client``) and a
pass-through for anything else. This module rebuilds those commands on the jars of the installed
pyspark, with the pod's environment resolved as the kubelet would resolve it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import attrs

from k8s_backend.conf.frozen import FrozenDict, freeze
from k8s_backend.kube.incluster import SERVICE_ACCOUNT_DIR, SERVICE_ACCOUNT_DIR_ENV
from k8s_backend.kube.quantity import memory_bytes
from k8s_backend.local.kubelet.env import ContainerStartError, Lookup, PodRuntime, expand, resolve_env
from k8s_backend.local.kubelet.volumes import PathMapper

Obj = dict[str, Any]

ENTRYPOINT = "/opt/entrypoint.sh"
IMAGE_SPARK_HOME = "/opt/spark"
IMAGE_WORK_DIR = "/opt/spark/work-dir"
EXECUTOR_MAIN = "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend"

# Spark's launcher adds these JVM options (org.apache.spark.launcher.JavaModuleOptions) so that Spark runs
# on Java 17+; an executor JVM without the --add-opens fails early with InaccessibleObjectException.
JDK_MODULE_OPTIONS: tuple[str, ...] = (
    "-XX:+IgnoreUnrecognizedVMOptions",
    "--add-modules=jdk.incubator.vector",
    *(
        f"--add-opens={module}=ALL-UNNAMED"
        for module in (
            "java.base/java.lang",
            "java.base/java.lang.invoke",
            "java.base/java.lang.reflect",
            "java.base/java.io",
            "java.base/java.net",
            "java.base/java.nio",
            "java.base/java.util",
            "java.base/java.util.concurrent",
            "java.base/java.util.concurrent.atomic",
            "java.base/jdk.internal.ref",
            "java.base/sun.nio.ch",
            "java.base/sun.nio.cs",
            "java.base/sun.security.action",
            "java.base/sun.util.calendar",
            "java.security.jgss/sun.security.krb5",
        )
    ),
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dio.netty.allocator.type=pooled",
    "-Dio.netty.handler.ssl.defaultEndpointVerificationAlgorithm=NONE",
)

K8S_BACKEND_COMMAND = "k8s-backend"
K8S_BACKEND_MODULE = "k8s_backend.cli.main"  # what the console script runs
CommandKind = Literal["executor", "driver", "command", "idle"]


@attrs.frozen
class HostEnvironment:
    """Where Spark, Java and Python live on this machine, and the base environment of every process."""

    spark_home: str
    java: str  # "" when no JVM was found; executor and driver containers then fail with StartError
    python: str
    base_env: FrozenDict = attrs.field(converter=freeze, factory=FrozenDict)

    @classmethod
    def detect(cls) -> HostEnvironment:
        """pyspark's folder as SPARK_HOME, ``$JAVA_HOME/bin/java`` or ``java`` on PATH, this Python."""
        spec = importlib.util.find_spec("pyspark")
        spark_home = "" if spec is None or spec.origin is None else str(Path(spec.origin).parent)
        java_home = os.environ.get("JAVA_HOME", "")
        java = os.path.join(java_home, "bin", "java") if java_home else (shutil.which("java") or "")
        # The driver's own Spark settings must not leak into executors through the environment.
        base = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
        return cls(spark_home=spark_home, java=java, python=sys.executable, base_env=base)

    def with_api_service(self, host: str, port: int) -> HostEnvironment:
        """The same, with the variables a kubelet gives every container for the ``kubernetes`` Service
        (how in-cluster clients find the API server): here the API server's own address on this host."""
        service = {
            "KUBERNETES_SERVICE_HOST": host,
            "KUBERNETES_SERVICE_PORT": str(port),
            "KUBERNETES_SERVICE_PORT_HTTPS": str(port),
            "KUBERNETES_PORT": f"tcp://{host}:{port}",
        }
        return attrs.evolve(self, base_env={**self.base_env, **service})


@attrs.frozen
class LocalCommand:
    """A container as a local process. ``kind="idle"`` means: nothing to run, keep it "running"."""

    kind: CommandKind
    argv: tuple[str, ...]
    env: FrozenDict = attrs.field(converter=freeze)
    cwd: str
    memory_limit: int | None = None


def is_spark_container(container: Obj) -> bool:
    """Whether the container relies on the Spark image's entrypoint with an executor or driver branch."""
    command = list(container.get("command") or [])
    args = list(container.get("args") or [])
    return command in ([], [ENTRYPOINT]) and bool(args) and args[0] in ("executor", "driver")


def memory_limit(container: Obj) -> int | None:
    """The container's memory limit in bytes, if it has one."""
    limit = ((container.get("resources") or {}).get("limits") or {}).get("memory")
    if limit is None:
        return None
    return memory_bytes(limit, field=f"container {container.get('name')} memory limit")


def translate(
    pod: Obj,
    container: Obj,
    *,
    host: HostEnvironment,
    runtime: PodRuntime,
    mounts: Mapping[str, str],
    cwd: str,
    lookup: Lookup,
) -> LocalCommand:
    """The local command for one container of a bound pod.

    ``mounts`` maps the container's mount paths to local directories; the image's own
    ``/opt/spark`` and working directory are mapped to ``host.spark_home`` and ``cwd``.
    """
    paths = PathMapper({IMAGE_SPARK_HOME: host.spark_home, IMAGE_WORK_DIR: cwd, **mounts})
    pod_env = {k: paths.map_value(v) for k, v in resolve_env(pod, container, runtime, lookup).items()}
    env = {**host.base_env, **pod_env, "SPARK_HOME": host.spark_home}
    service_account = paths.map(SERVICE_ACCOUNT_DIR)
    if service_account is not None:
        # In-cluster clients read the token at a fixed path; this process finds the mount's local
        # directory here (k8s_backend.kube.config honours it).
        env[SERVICE_ACCOUNT_DIR_ENV] = service_account
    else:
        env.pop(SERVICE_ACCOUNT_DIR_ENV, None)
    for var in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        # The image's Python path rarely exists here; a pod asking for a local interpreter keeps it.
        if not keeps_python(env.get(var, "")):
            env[var] = host.python
    limit = memory_limit(container)
    command = list(container.get("command") or [])
    args = [expand(str(a), pod_env) for a in container.get("args") or []]
    if is_spark_container(container):
        # Inside a pod the host name resolves to the pod's IP; here it would not, so say it directly.
        env.setdefault("SPARK_LOCAL_IP", runtime.pod_ip)
        if args[0] == "executor":
            return LocalCommand("executor", executor_argv(env, host, runtime, cwd), env, cwd, limit)
        return LocalCommand("driver", driver_argv(env, args[1:], host, runtime, paths), env, cwd, limit)
    argv = [expand(str(c), pod_env) for c in command] + args
    if not argv:
        # The image's own entrypoint is unknown here: the container just "runs" until it is stopped.
        return LocalCommand("idle", (), env, cwd, limit)
    argv = [paths.map_value(a) if a.startswith(("/", "local://")) else a for a in argv]
    executable = argv[0] if os.path.isabs(argv[0]) else shutil.which(argv[0], path=env.get("PATH"))
    if not executable and argv[0] == K8S_BACKEND_COMMAND:
        # A cluster-mode driver runs this library's own command; the interpreter that runs the kubelet
        # has it even when its scripts directory is not on PATH (a venv that was not activated).
        return LocalCommand("command", (host.python, "-m", K8S_BACKEND_MODULE, *argv[1:]), env, cwd, limit)
    if not executable or not os.access(executable, os.X_OK):
        return LocalCommand("idle", (), env, cwd, limit)
    return LocalCommand("command", (executable, *argv[1:]), env, cwd, limit)


def keeps_python(value: str) -> bool:
    """Whether a pod's ``PYSPARK_PYTHON`` works here: an interpreter on this machine, or a relative path
    such as ``./environment/bin/python``, into an ``--archives`` environment that Spark unpacks in the
    working directory (it does not exist yet when the container starts)."""
    if not value:
        return False
    return bool(shutil.which(value)) or ("/" in value and not os.path.isabs(value))


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "")
    if not value:
        raise ContainerStartError(
            f"the executor container has no {name} environment variable; Spark's executor pods set it "
            "(check the pod template or feature steps that rewrite the container's env)"
        )
    return value


def _java(host: HostEnvironment) -> str:
    if not host.java or not os.path.exists(host.java):
        raise ContainerStartError(
            f"no Java runtime found (tried {host.java or 'JAVA_HOME and PATH'}): "
            "set JAVA_HOME or put java on PATH"
        )
    if not host.spark_home or not os.path.isdir(os.path.join(host.spark_home, "jars")):
        raise ContainerStartError(f"no Spark jars under SPARK_HOME={host.spark_home!r}: install pyspark")
    return host.java


def java_options(env: Mapping[str, str]) -> list[str]:
    """The ``SPARK_JAVA_OPT_<n>`` values in numeric order, as the entrypoint sorts them."""
    numbered = []
    for key, value in env.items():
        suffix = key[len("SPARK_JAVA_OPT_") :]
        if key.startswith("SPARK_JAVA_OPT_") and suffix.isdigit():
            numbered.append((int(suffix), value))
    return [value for _, value in sorted(numbered)]


def spark_classpath(env: Mapping[str, str], spark_home: str, cwd: str) -> str:
    """The entrypoint's classpath: conf dirs first, then user classpath, Spark's jars, extras, the cwd."""
    parts = [p for p in env.get("SPARK_CLASSPATH", "").split(os.pathsep) if p]
    parts.append(os.path.join(spark_home, "jars", "*"))
    if env.get("SPARK_EXTRA_CLASSPATH"):
        parts.append(env["SPARK_EXTRA_CLASSPATH"])
    if env.get("HADOOP_CONF_DIR"):
        parts.insert(0, env["HADOOP_CONF_DIR"])
    parts.insert(0, env.get("SPARK_CONF_DIR") or os.path.join(spark_home, "conf"))
    parts.append(cwd)
    if env.get("SPARK_DIST_CLASSPATH"):
        parts.append(env["SPARK_DIST_CLASSPATH"])
    return os.pathsep.join(parts)


def executor_argv(
    env: Mapping[str, str], host: HostEnvironment, runtime: PodRuntime, cwd: str
) -> tuple[str, ...]:
    """The entrypoint's ``executor`` branch on local jars."""
    java = _java(host)
    options = java_options(env)
    if not any(o.startswith("--add-opens") for o in options):
        options = [*JDK_MODULE_OPTIONS, *options]
    memory = _required(env, "SPARK_EXECUTOR_MEMORY")
    return (
        java,
        *options,
        f"-Xms{memory}",
        f"-Xmx{memory}",
        "-cp",
        spark_classpath(env, host.spark_home, cwd),
        EXECUTOR_MAIN,
        "--driver-url",
        _required(env, "SPARK_DRIVER_URL"),
        "--executor-id",
        _required(env, "SPARK_EXECUTOR_ID"),
        "--cores",
        _required(env, "SPARK_EXECUTOR_CORES"),
        "--app-id",
        _required(env, "SPARK_APPLICATION_ID"),
        "--hostname",
        env.get("SPARK_EXECUTOR_POD_IP") or runtime.pod_ip,
        "--resourceProfileId",
        env.get("SPARK_RESOURCE_PROFILE_ID") or "0",
        "--podName",
        _required(env, "SPARK_EXECUTOR_POD_NAME"),
    )


def driver_argv(
    env: Mapping[str, str], args: list[str], host: HostEnvironment, runtime: PodRuntime, paths: PathMapper
) -> tuple[str, ...]:
    """The entrypoint's ``driver`` branch: ``spark-submit --deploy-mode client <args>`` on local Spark.

    This is the hook for cluster mode: the driver pod's arguments (``--properties-file``, ``--class``,
    the application resource, often a ``local://`` URI) are passed through with container paths mapped
    onto local ones. Application files that exist only inside a real image need a volume or a path that
    also exists on this machine.
    """
    _java(host)
    bind = env.get("SPARK_DRIVER_BIND_ADDRESS") or runtime.pod_ip
    return (
        os.path.join(host.spark_home, "bin", "spark-submit"),
        "--conf",
        f"spark.driver.bindAddress={bind}",
        "--conf",
        f"spark.executorEnv.SPARK_DRIVER_POD_IP={bind}",
        "--deploy-mode",
        "client",
        *(paths.map_value(a) if a.startswith(("/", "local://")) else a for a in args),
    )
