"""spark-submit's command line, as users type it, and the Spark properties it amounts to.

Options come before the application file, in either form ``--name value`` or ``--name=value``; the
first argument that is not an option is the application, everything after it belongs to the
application. Properties are merged with spark-submit's precedence: command-line flags, then ``--conf``,
then the properties file (``--properties-file``, else ``spark-defaults.conf`` from ``$SPARK_CONF_DIR``
or ``$SPARK_HOME/conf``). Keys that do not start with ``spark.`` are ignored with a warning, as
spark-submit does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from k8s_backend.cli.common.driver_token import SECRET_CONF_ENV
from k8s_backend.cli.common.errors import UsageError
from k8s_backend.cli.common.properties import default_properties_file, parse_properties, read_properties_file
from k8s_backend.conf.frozen import FrozenDict, freeze

# Flags that set a Spark property (spark-submit's SparkSubmitArguments).
FLAG_KEYS: Mapping[str, str] = {
    "--master": "spark.master",
    "--deploy-mode": "spark.submit.deployMode",
    "--name": "spark.app.name",
    "--py-files": "spark.submit.pyFiles",
    "--files": "spark.files",
    "--archives": "spark.archives",
    "--jars": "spark.jars",
    "--packages": "spark.jars.packages",
    "--exclude-packages": "spark.jars.excludes",
    "--repositories": "spark.jars.repositories",
    "--num-executors": "spark.executor.instances",
    "--executor-memory": "spark.executor.memory",
    "--executor-cores": "spark.executor.cores",
    "--driver-memory": "spark.driver.memory",
    "--driver-cores": "spark.driver.cores",
    "--driver-java-options": "spark.driver.extraJavaOptions",
    "--driver-library-path": "spark.driver.extraLibraryPath",
    "--driver-class-path": "spark.driver.extraClassPath",
    "--namespace": "spark.kubernetes.namespace",  # not spark-submit's: as status, kill, list and gc take it
    "--kubeconfig": "spark.kubernetes.kubeconfig",  # as kubectl's
    "--context": "spark.kubernetes.context",
}
# Options with a value that are not properties.
VALUE_OPTIONS = frozenset({"--conf", "--properties-file", "--kill", "--status", "--driver-command"})
SWITCHES = frozenset({"--verbose", "--help", "--version", "--load-spark-defaults", "--follow-log"})
ALIASES = {"-c": "--conf", "-v": "--verbose", "-h": "--help", "-n": "--namespace"}
# spark-submit options that make no sense for a Python application run by k8s_backend.
UNSUPPORTED: Mapping[str, str] = {
    "--class": "it names the main class of a JVM application; k8s-backend submit runs Python "
    "applications (a .py file)",
    "--proxy-user": "impersonation is a Hadoop feature spark-submit implements; run as that user instead",
    "--principal": "Kerberos login is done by spark-submit; use spark-submit for Kerberized clusters",
    "--keytab": "Kerberos login is done by spark-submit; use spark-submit for Kerberized clusters",
    "--supervise": "it restarts drivers of Spark standalone clusters only",
    "--queue": "it picks a YARN queue; on Kubernetes use spark.kubernetes.scheduler.name and its queue "
    "settings",
    "--total-executor-cores": "it caps the cores of Spark standalone and Mesos applications; on "
    "Kubernetes size the application with --num-executors and --executor-cores (or "
    "spark.dynamicAllocation.maxExecutors)",
}
POSITIVE_INT_FLAGS = ("--num-executors", "--executor-cores", "--driver-cores")
DEPLOY_MODES = ("client", "cluster")


@attrs.frozen
class SubmitArgs:
    """What was typed: flags (last one wins), ``--conf`` pairs in order, switches, the application."""

    flags: FrozenDict = attrs.field(factory=FrozenDict, converter=freeze)
    conf: tuple[tuple[str, str], ...] = ()
    properties_file: str | None = None
    switches: frozenset[str] = frozenset()
    app: str | None = None
    app_args: tuple[str, ...] = ()
    kill: str | None = None
    status: str | None = None
    driver_command: str | None = None
    verbosity: int = 0  # how many --verbose/-v came before the application file

    def has(self, switch: str) -> bool:
        return switch in self.switches

    @property
    def verbose(self) -> bool:
        return self.has("--verbose")


@attrs.frozen
class MergedProperties:
    """The Spark properties of a submission, where the file came from, and what was ignored."""

    properties: FrozenDict = attrs.field(converter=freeze)
    files_read: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def parse_submit_args(argv: Sequence[str]) -> SubmitArgs:
    """Parse spark-submit style arguments; :class:`UsageError` for anything spark-submit would reject."""
    flags: dict[str, str] = {}
    conf: list[tuple[str, str]] = []
    values: dict[str, str] = {}
    switches: set[str] = set()
    verbosity = 0
    index = 0
    while index < len(argv):
        arg = argv[index]
        name, has_inline, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        name = ALIASES.get(name, name)
        if name in SWITCHES:
            if has_inline:
                raise UsageError(f"{name} takes no value (got {arg!r})")
            switches.add(name)
            verbosity += name == "--verbose"
            index += 1
            continue
        if name in FLAG_KEYS or name in VALUE_OPTIONS or name in UNSUPPORTED:
            if has_inline:
                value = inline
                index += 1
            elif index + 1 < len(argv):
                value = argv[index + 1]
                index += 2
            else:
                raise UsageError(f"Missing argument for option '{name}'")
            if name in UNSUPPORTED:
                raise UsageError(f"{name} is not supported by k8s-backend submit: {UNSUPPORTED[name]}")
            if name == "--conf":
                conf.append(parse_conf_pair(value))
            elif name in FLAG_KEYS:
                flags[name] = value
            else:
                values[name] = value
            continue
        if arg.startswith("-") and arg != "-":
            raise UsageError(
                f"Unrecognized option '{arg}'. Options go before the application file; run "
                "`k8s-backend submit --help` for the list"
            )
        return attrs.evolve(
            _args(flags, conf, values, switches, arg, tuple(argv[index + 1 :])), verbosity=verbosity
        )
    return attrs.evolve(_args(flags, conf, values, switches, None, ()), verbosity=verbosity)


def _args(
    flags: dict[str, str],
    conf: list[tuple[str, str]],
    values: dict[str, str],
    switches: set[str],
    app: str | None,
    app_args: tuple[str, ...],
) -> SubmitArgs:
    return SubmitArgs(
        flags=flags,
        conf=tuple(conf),
        properties_file=values.get("--properties-file"),
        switches=frozenset(switches),
        app=app,
        app_args=app_args,
        kill=values.get("--kill"),
        status=values.get("--status"),
        driver_command=values.get("--driver-command"),
    )


def parse_conf_pair(text: str) -> tuple[str, str]:
    """``key=value`` of a ``--conf``; :class:`UsageError` with the fix when it is not one."""
    key, equals, value = text.partition("=")
    if not equals:
        raise UsageError(
            f"--conf {text}: a Spark property is written key=value (e.g. --conf spark.executor.memory=2g)"
        )
    if not key.strip():
        raise UsageError(f"--conf {text}: the property name before '=' is empty")
    return key.strip(), value


def check_flags(args: SubmitArgs) -> None:
    """spark-submit's own checks of flag values (positive counts, a known deploy mode)."""
    for flag in POSITIVE_INT_FLAGS:
        raw = args.flags.get(flag)
        if raw is None:
            continue
        try:
            number = int(raw)
        except ValueError:
            number = 0
        if number <= 0:
            raise UsageError(f"{flag} {raw}: must be a positive whole number (e.g. {flag} 2)")
    mode = args.flags.get("--deploy-mode")
    if mode is not None and mode not in DEPLOY_MODES:
        raise UsageError(f"--deploy-mode {mode}: must be client or cluster")


def merge_properties(args: SubmitArgs, environ: Mapping[str, str]) -> MergedProperties:
    """The Spark properties of ``args``: flags > ``--conf`` > a cluster-mode driver's secret properties
    (:data:`~k8s_backend.cli.common.driver_token.SECRET_CONF_ENV`) > properties file(s) > ``$MASTER``."""
    check_flags(args)
    properties: dict[str, str] = {}
    for key, value in args.conf:
        properties[key] = value  # a later --conf of the same key wins
    files: list[str] = []
    if args.properties_file is not None:
        files.append(args.properties_file)
    if args.properties_file is None or args.has("--load-spark-defaults"):
        default = default_properties_file(environ)
        if default is not None:
            files.append(default)
    secret_conf = environ.get(SECRET_CONF_ENV)
    if secret_conf:
        try:
            secrets = parse_properties(secret_conf)
        except ValueError as error:
            raise UsageError(f"${SECRET_CONF_ENV}: {error}") from None
        for key, value in secrets.items():
            properties.setdefault(key, value)
    for path in files:
        for key, value in read_properties_file(path).items():
            properties.setdefault(key, value)
    warnings = [
        f"Ignoring non-Spark config property: {key}" for key in properties if not key.startswith("spark.")
    ]
    properties = {k: v for k, v in properties.items() if k.startswith("spark.")}
    for flag, value in args.flags.items():
        properties[FLAG_KEYS[flag]] = value
    if "spark.master" not in properties and environ.get("MASTER"):
        properties["spark.master"] = environ["MASTER"]
    mode = properties.get("spark.submit.deployMode", "client")
    if mode not in DEPLOY_MODES:
        raise UsageError(f"spark.submit.deployMode={mode}: must be client or cluster")
    properties["spark.submit.deployMode"] = mode
    if "spark.app.name" not in properties and args.app:
        properties["spark.app.name"] = app_file_name(args.app)
    return MergedProperties(properties, tuple(files), tuple(warnings))


def app_file_name(app: str) -> str:
    """The file name of an application path or URI (spark-submit's default application name)."""
    return app.rstrip("/").rsplit("/", 1)[-1] or app
