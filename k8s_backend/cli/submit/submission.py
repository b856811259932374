"""A checked submission: every argument and property validated before any API call.

:func:`build_submission` turns :class:`SubmitArgs` into a :class:`Submission` or raises
:class:`UsageError` naming the flag or key, the bad value and the fix (exit code 2, nothing created).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

from k8s_backend.cli.common.cluster_api import master_kind, normalize_master, to_kubernetes_conf
from k8s_backend.cli.common.errors import UsageError
from k8s_backend.cli.common.submit_args import MergedProperties, SubmitArgs, merge_properties
from k8s_backend.cli.submit.uploads import UploadPlan, stage
from k8s_backend.cli.submit.uris import LOCAL_SCHEME, UPLOAD_PATH_KEY, is_remote, local_path, split_list
from k8s_backend.conf import keys
from k8s_backend.conf.frozen import FrozenDict, freeze
from k8s_backend.conf.model import KubernetesConf, redacted
from k8s_backend.conf.parse import mark_unknown_keys_told, unknown_key_warnings
from k8s_backend.errors import ConfigError
from k8s_backend.kube.masters import MASTER_KEY, MasterKind
from k8s_backend.local.images import default_spark_image
from k8s_backend.pods.template import read_template_file

# Keys only spark-submit reads (the keys table passes them through unchecked): checked here.
SUBMISSION_KEYS = (
    "spark.kubernetes.submission.waitAppCompletion",
    "spark.kubernetes.report.interval",
    "spark.kubernetes.submission.requestTimeout",
    "spark.kubernetes.submission.connectionTimeout",
    "spark.kubernetes.appKillPodDeletionGracePeriod",
    "spark.kubernetes.driver.request.cores",
    "spark.kubernetes.driver.limit.cores",
)
JVM_SUFFIXES = (".jar", ".r", ".R")
ARCHIVES_KEY = "spark.archives"
# The local files each flag names, checked before anything starts (--packages is Ivy's to resolve).
DEPENDENCY_FLAGS = (
    ("--py-files", "spark.submit.pyFiles"),
    ("--files", "spark.files"),
    ("--archives", ARCHIVES_KEY),
    ("--jars", "spark.jars"),
)
# The pod templates this machine reads: the driver's when it creates the driver pod (cluster mode), the
# executors' when its driver creates them (client mode; a cluster-mode driver reads its own in its pod).
POD_TEMPLATE_KEYS = {
    "cluster": "spark.kubernetes.driver.podTemplateFile",
    "client": "spark.kubernetes.executor.podTemplateFile",
}
DEFAULT_DRIVER_COMMAND = ("k8s-backend",)


@attrs.frozen
class Submission:
    """What to run and how, all checked."""

    properties: FrozenDict = attrs.field(converter=freeze, repr=lambda props: repr(redacted(props)))
    conf: KubernetesConf
    master: str  # always pyk8s://...
    master_kind: MasterKind
    deploy_mode: str
    app: str  # as given (a local path, file:// or local:// URI)
    app_args: tuple[str, ...] = ()
    wait: bool = True
    follow_log: bool = False
    verbose: bool = False
    driver_command: tuple[str, ...] = DEFAULT_DRIVER_COMMAND
    files_read: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    uploads: UploadPlan | None = None  # cluster mode with spark.kubernetes.file.upload.path: to upload

    @property
    def namespace(self) -> str:
        return self.conf.namespace

    @property
    def app_name(self) -> str:
        return self.conf.app_name





def check_submission_keys(properties: Mapping[str, str]) -> None:
    """Check the keys only spark-submit reads, with the keys table's own rules."""
    for name in SUBMISSION_KEYS:
        raw = properties.get(name)
        if raw is None:
            continue
        try:
            keys.key(name).convert(raw)
        except ConfigError as error:
            raise UsageError(str(error)) from None


def build_submission(args: SubmitArgs, environ: Mapping[str, str]) -> Submission:
    """Check ``args`` (and the files they name) and build the :class:`Submission`."""
    if args.app is None:
        raise UsageError(
            "no application file: give the Python file to run after the options, e.g. "
            "`k8s-backend submit --master pyk8s://local app.py ARGS`"
        )
    merged: MergedProperties = merge_properties(args, environ)
    properties = dict(merged.properties)
    master = normalize_master(properties.get(MASTER_KEY))
    properties[MASTER_KEY] = master
    unknown = unknown_key_warnings(properties)  # printed before anything starts (submit_command)
    mark_unknown_keys_told(properties)  # so the parses below do not log them a second time
    conf = to_kubernetes_conf(properties)
    kind = master_kind(conf)
    deploy_mode = properties["spark.submit.deployMode"]
    check_submission_keys(properties)
    check_app_file(args.app, deploy_mode)
    for flag, key in DEPENDENCY_FLAGS:
        for entry in split_list(properties.get(key, "")):
            # An archive's "#alias" names the directory it unpacks into, not part of the file's path.
            check_dependency(flag, entry.split("#", 1)[0] if key == ARCHIVES_KEY else entry, deploy_mode)
    check_pod_templates(properties, deploy_mode)
    if deploy_mode == "cluster" and not properties.get(UPLOAD_PATH_KEY, "").strip():
        check_cluster_jvm_files(properties)
    if kind is not MasterKind.LOCAL:
        require_images(conf, properties, deploy_mode)
    wait = keys.key("spark.kubernetes.submission.waitAppCompletion").convert(
        properties.get("spark.kubernetes.submission.waitAppCompletion", "true")
    )
    warnings = [*unknown, *merged.warnings]
    if kind is MasterKind.LOCAL and deploy_mode == "cluster" and not wait:
        warnings.append(
            "spark.kubernetes.submission.waitAppCompletion=false is ignored with pyk8s://local: the "
            "embedded cluster lives only as long as this command, so it waits for the application"
        )
        wait = True
    sub = Submission(
        properties=properties,
        conf=conf,
        master=master,
        master_kind=kind,
        deploy_mode=deploy_mode,
        app=args.app,
        app_args=args.app_args,
        wait=bool(wait),
        follow_log=args.has("--follow-log"),
        verbose=args.verbose,
        driver_command=driver_command(args.driver_command),
        files_read=merged.files_read,
        warnings=tuple(warnings),
    )
    if deploy_mode != "cluster":
        return sub
    # With the upload path: local files' URIs rewritten to where they will be (nothing written yet).
    staged = stage(sub.app, sub.properties)
    return attrs.evolve(sub, app=staged.app, properties=staged.properties, uploads=staged.plan)


def driver_command(text: str | None) -> tuple[str, ...]:
    """The command that starts ``k8s-backend`` inside the driver container (``--driver-command``)."""
    if text is None:
        return DEFAULT_DRIVER_COMMAND
    import shlex

    parts = tuple(shlex.split(text))
    if not parts:
        raise UsageError("--driver-command is empty; e.g. --driver-command 'python3 -m k8s_backend.cli.main'")
    return parts


def check_app_file(app: str, deploy_mode: str) -> None:
    """The application must be a Python file that exists (or a ``local://`` path in the image)."""
    if app.endswith(JVM_SUFFIXES):
        raise UsageError(
            f"application {app}: k8s-backend submit runs Python applications (a .py file); use "
            "spark-submit for JVM and R applications"
        )
    check_dependency("application file", app, deploy_mode)


def check_dependency(what: str, uri: str, deploy_mode: str) -> None:
    """A file the application needs: local and existing, ``local://`` (a path inside the image), or a
    remote URI, which the client-mode driver fetches with Hadoop's FileSystem, as spark-submit does."""
    if is_remote(uri):
        return
    if uri.startswith(LOCAL_SCHEME):
        if deploy_mode == "client" and not os.path.isfile(uri[len(LOCAL_SCHEME) :]):
            raise UsageError(f"{what} {uri}: {uri[len(LOCAL_SCHEME) :]} does not exist on this machine")
        return
    path = local_path(uri) or uri
    if not os.path.exists(path):
        raise UsageError(f"{what} {uri}: no such file")
    if not os.path.isfile(path):
        raise UsageError(f"{what} {uri}: not a regular file")


def check_pod_templates(properties: Mapping[str, str], deploy_mode: str) -> None:
    """The pod template read on this machine must be a readable Pod: checked now, in one line, rather
    than when the driver builds its first pod."""
    key = POD_TEMPLATE_KEYS.get(deploy_mode, "")
    path = properties.get(key, "").strip()
    if not path:
        return
    try:
        read_template_file(path, key=key)
    except ConfigError as error:
        raise UsageError(
            f"{error}; point {key} to a Pod template (YAML or JSON) on this machine, or leave it unset"
        ) from None


def check_cluster_jvm_files(properties: Mapping[str, str]) -> None:
    """Without an upload path, local ``--jars``/``--archives`` would be missing in the pods."""
    for flag, key in (("--jars", "spark.jars"), ("--archives", "spark.archives")):
        for entry in split_list(properties.get(key, "")):
            if not entry.startswith(LOCAL_SCHEME) and local_path(entry.split("#", 1)[0]) is not None:
                raise UsageError(
                    f"{flag} {entry}: in cluster mode, jars and archives are not shipped to the driver pod; "
                    f"set {UPLOAD_PATH_KEY} to a directory the pods share (e.g. file:///shared/uploads) to "
                    "upload them, as spark-submit does, put them in the image and pass "
                    "local:///path/in/image, or give a remote URI"
                )


def require_images(conf: KubernetesConf, properties: Mapping[str, str], deploy_mode: str) -> None:
    """Executors (and, in cluster mode, the driver) need an image; say which key sets it."""
    if conf.executor.image is None:
        raise UsageError(
            "no executor image: set spark.kubernetes.container.image (or "
            "spark.kubernetes.executor.container.image) to an image with Spark and Python, e.g. "
            f"--conf spark.kubernetes.container.image={default_spark_image()}"
        )
    if deploy_mode == "cluster" and not driver_image(properties):
        raise UsageError(
            "no driver image: cluster mode runs the driver in a pod; set "
            "spark.kubernetes.driver.container.image (or spark.kubernetes.container.image) to an image "
            "with Spark, Python and k8s_backend installed"
        )


def driver_image(properties: Mapping[str, str]) -> str | None:
    return properties.get("spark.kubernetes.driver.container.image") or properties.get(
        "spark.kubernetes.container.image"
    )
