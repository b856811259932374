"""Client mode: run the application in this process, with k8s_backend managing its executors.

The driver JVM is readied with the submission's properties as its defaults (what spark-submit's
system properties do), so an unmodified script's ``SparkSession.builder.getOrCreate()`` gets a
``pyk8s://`` context. The script runs as ``__main__`` with ``sys.argv`` set to its arguments and its
directory and ``--py-files`` on ``sys.path``; ``--py-files`` and ``--files`` are shipped to executors
as spark-submit ships them; a remote application or ``--py-files`` is fetched first with Hadoop's
FileSystem (:func:`fetched`). The exit code is the script's (1 for an uncaught exception). A context the
script left running is stopped, which deletes its executor pods.
"""

from __future__ import annotations

import logging
import os
import runpy
import shutil
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import FrameType
from urllib.parse import urlsplit

import attrs

from k8s_backend.cli.common.cluster_api import Connector, Permission, official_connection, preflight
from k8s_backend.cli.common.console import Console
from k8s_backend.cli.common.deps import DriverRuntime
from k8s_backend.cli.common.errors import UsageError
from k8s_backend.cli.submit import exit_exception
from k8s_backend.cli.submit.submission import Submission
from k8s_backend.cli.submit.uploads import open_hadoop
from k8s_backend.cli.submit.uris import LOCAL_SCHEME, is_remote, local_path, split_list
from k8s_backend.common.failure_sink import is_failure_record
from k8s_backend.common.signals import TERMINATING_SIGNALS, Terminated, signals_held
from k8s_backend.errors import ConfigError
from k8s_backend.kube.masters import MasterKind
from k8s_backend.kube.port import CONFIG_MAPS, LEASES, PODS, SECRETS
from k8s_backend.pods.auth_secret import executors_need_auth_secret

INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C ended


def pyspark_runtime(*, verbose: bool = False) -> DriverRuntime:
    """The real runtime, from :mod:`k8s_backend.spark.client_mode` (only spark/ touches pyspark); the
    driver JVM's log shows the frames of Java stack traces, and what it logs because k8s_backend failed
    the application (which this command tells in one line), only when ``verbose``."""
    # Imported on use: k8s_backend.spark loads pyspark and installs its builder hook, which no other
    # subcommand (nor `submit --deploy-mode cluster`) should pay for or be affected by.
    from k8s_backend.spark import client_mode

    return client_mode.runtime(java_stacks=verbose, quiet_failure=not verbose)


def in_process_path(uri: str) -> str:
    """The local path of an application file (``local://`` and ``file://`` stripped), absolute."""
    path = uri[len(LOCAL_SCHEME) :] if uri.startswith(LOCAL_SCHEME) else (local_path(uri) or uri)
    return os.path.abspath(path)


@contextmanager
def fetched(sub: Submission) -> Iterator[Submission]:
    """``sub`` with a remote application and remote ``--py-files`` (``hdfs://``, ``s3a://``,
    ``viewfs://``...; e.g. uploaded by a cluster-mode submit through ``spark.kubernetes.file.upload.path``)
    copied into a temporary directory with Hadoop's FileSystem, as spark-submit's client mode downloads
    them: this process runs and imports them. Remote ``--files`` stay remote: Spark fetches them."""
    py_files = split_list(sub.properties.get("spark.submit.pyFiles", ""))
    remote = [uri for uri in (sub.app, *py_files) if is_remote(uri)]
    if not remote:
        yield sub
        return
    with tempfile.TemporaryDirectory(prefix="k8s-backend-fetched-") as directory:
        hadoop = open_hadoop(sub.properties)
        local: dict[str, str] = {}
        for uri in dict.fromkeys(remote):
            target = os.path.join(directory, str(len(local)), os.path.basename(urlsplit(uri).path))
            os.makedirs(os.path.dirname(target))
            try:
                hadoop.copy_to_local(uri, target)
            except OSError as error:
                raise UsageError(f"cannot fetch {uri} with Hadoop's FileSystem: {error}") from None
            local[uri] = target
        properties = dict(sub.properties)
        if py_files:
            properties["spark.submit.pyFiles"] = ",".join(local.get(p, p) for p in py_files)
        yield attrs.evolve(sub, app=local.get(sub.app, sub.app), properties=properties)


def driver_properties(sub: Submission) -> dict[str, str]:
    """The properties the driver starts with: files as absolute local paths, py-files shipped as files."""
    properties = dict(sub.properties)
    properties["spark.master"] = sub.master
    properties["spark.submit.deployMode"] = "client"
    py_files = [in_process_path(p) for p in split_list(properties.get("spark.submit.pyFiles", ""))]
    files = [p if is_remote(p) else in_process_path(p) for p in split_list(properties.get("spark.files", ""))]
    for key, values in (("spark.submit.pyFiles", py_files), ("spark.files", files + py_files)):
        if values:
            properties[key] = ",".join(dict.fromkeys(values))
        else:
            properties.pop(key, None)
    return properties


def client_needs(sub: Submission) -> list[Permission]:
    needs = [Permission("create", PODS), Permission("watch", PODS), Permission("delete", PODS)]
    if not sub.conf.executor.disable_config_map:
        needs.append(Permission("create", CONFIG_MAPS))
    if executors_need_auth_secret(sub.conf):
        needs.append(Permission("create", SECRETS))
    # the client-mode driver's heartbeat Lease (k8s_backend.backend.heartbeat)
    if sub.conf.driver.heartbeat_enabled:
        needs += [Permission(verb, LEASES) for verb in ("create", "get", "patch", "delete")]
    return needs


def check_cluster(sub: Submission, connect: Connector) -> None:
    """Preflight with the settings the driver's backend will use (not for ``pyk8s://local``)."""
    if sub.master_kind is MasterKind.LOCAL:
        return
    connection = connect(sub.conf.api, sub.namespace)
    try:
        preflight(connection, sub.namespace, client_needs(sub))
    finally:
        connection.api.close()


def run_client(
    sub: Submission,
    console: Console,
    *,
    runtime: DriverRuntime | None = None,
    connect: Connector = official_connection,
    verbose: bool = False,
) -> int:
    """Run the application here; returns its exit code. ``verbose``: tracebacks of the failures
    k8s_backend explains in one line are printed too."""
    check_cluster(sub, connect)
    unused = cluster_only_keys(sub.properties)
    if unused:
        console.warning(
            "client mode builds no driver pod, so these driver pod settings do nothing (they act in "
            f"--deploy-mode cluster): {', '.join(unused)}"
        )
    try:  # a bad spark.kubernetes.driver.annotateExitException is told before the script runs
        exit_exception.exit_annotation(sub.properties, sub.namespace, "")
    except ConfigError as error:
        raise UsageError(str(error)) from None
    with fetched(sub) as sub:
        raised: list[BaseException] = []
        code = _run_driver(sub, console, runtime or pyspark_runtime(verbose=verbose), verbose, raised.append)
    if raised:
        annotate_exit_exception(sub, connect, console, raised[0])
    return code


def annotate_exit_exception(
    sub: Submission, connect: Connector, console: Console, error: BaseException
) -> None:
    """With ``spark.kubernetes.driver.annotateExitException``, the script's uncaught exception onto the
    driver pod (:mod:`k8s_backend.cli.submit.exit_exception`); a failure to write it is a warning, the
    exit code stays the application's."""
    annotation = exit_exception.exit_annotation(
        sub.properties, sub.namespace, exit_exception.exception_text(error)
    )
    if annotation is None:
        return
    try:
        connection = connect(sub.conf.api, sub.namespace)
        try:
            exit_exception.write_exit_annotation(connection.api, annotation)
        finally:
            connection.api.close()
    except Exception as failure:  # whatever stops the annotation must not hide the application's failure
        console.warning(
            f"could not write the exit exception on driver pod {annotation.pod} "
            f"({exit_exception.ANNOTATE_KEY}): {failure}"
        )


# Keys (or families) only the cluster-mode driver pod builder reads.
_CLUSTER_ONLY = (
    "spark.kubernetes.driver.secrets.",
    "spark.kubernetes.driver.secretKeyRef.",
    "spark.kubernetes.driver.volumes.",
    "spark.kubernetes.driver.pod.featureSteps",
    "spark.kubernetes.driver.pod.excludedFeatureSteps",
    "spark.kubernetes.driver.podTemplateFile",
    "spark.kubernetes.driver.service.ipFamilies",
    "spark.kubernetes.driver.service.ipFamilyPolicy",
    "spark.kubernetes.driver.service.publishNotReadyAddresses",
    "spark.kubernetes.kerberos.",
)


def cluster_only_keys(properties: Mapping[str, str]) -> list[str]:
    """The driver pod keys set for a client-mode driver outside a pod (inside the cluster-mode driver's
    pod, ``spark.kubernetes.submitInDriver`` is set and they were acted on already)."""
    if properties.get("spark.kubernetes.submitInDriver") == "true":
        return []
    return sorted(k for k in properties if k.startswith(_CLUSTER_ONLY))


def _run_driver(
    sub: Submission,
    console: Console,
    runtime: DriverRuntime,
    verbose: bool,
    on_exception: Callable[[BaseException], None] = lambda error: None,
) -> int:
    properties = driver_properties(sub)
    app = in_process_path(sub.app)
    py_files = split_list(properties.get("spark.submit.pyFiles", ""))
    with _termination_raises(console), _failure_record_left_out(verbose):
        runtime.prepare(sub.master, properties)
        try:
            code = run_script(
                app,
                sub.app_args,
                py_files,
                console,
                failure=runtime.failure,
                verbose=verbose,
                on_exception=on_exception,
            )
        finally:
            with signals_held():  # the cleanup that removes the executors must not be cut short
                runtime.stop()
        reason = runtime.failure()
    if reason is not None:
        # Told here however the script ended (it may have caught the Java error and exited 0): the
        # application did fail, so the exit code is not 0.
        console.error(f"the application failed: {reason}")
        return code or 1
    if code == INTERRUPTED:
        console.info("k8s-backend: interrupted; the application was stopped and its executors deleted")
    return code


@contextmanager
def _failure_record_left_out(verbose: bool) -> Iterator[None]:
    """Without ``verbose``, the log record in which k8s_backend tells that it failed the application
    (:data:`k8s_backend.common.failure_sink.FAILURE_RECORD`) is left out of the root logger's handlers
    while the driver runs here: this command tells that failure in one line, once. With -v both are shown."""
    if verbose:
        yield
        return
    handlers = list(logging.getLogger().handlers)
    for handler in handlers:
        handler.addFilter(not_the_failure_record)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(not_the_failure_record)


def not_the_failure_record(record: logging.LogRecord) -> bool:
    """A logging filter: false for k8s_backend's record of the application's failure."""
    return not is_failure_record(record)


# What a scheduler, CI runner or `timeout` sends to stop a job (SIGTERM, SIGHUP) ends the script as
# Ctrl-C does (k8s_backend.common.signals), so the SparkContext is stopped and its executor pods are deleted.


@contextmanager
def _termination_raises(console: Console) -> Iterator[None]:
    """While the driver runs here, SIGTERM and SIGHUP raise :class:`Terminated` in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread can take signals (an embedding program keeps its own handlers)
        return

    def terminate(signum: int, frame: FrameType | None) -> None:
        console.info(f"k8s-backend: {signal.Signals(signum).name} received; stopping the application")
        raise Terminated(signum)

    previous = {sig: signal.signal(sig, terminate) for sig in TERMINATING_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_script(
    app: str,
    args: Sequence[str],
    py_files: Sequence[str],
    console: Console,
    *,
    failure: Callable[[], str | None] = lambda: None,
    verbose: bool = False,
    on_exception: Callable[[BaseException], None] = lambda error: None,
) -> int:
    """Run ``app`` as ``__main__`` (like ``python app ARGS``); returns the exit code it asked for.
    ``on_exception`` is given the exception the script did not catch (not an exit or a signal).

    An exception the script did not catch prints its traceback, as ``python`` does, unless k8s_backend
    failed the application (``failure`` says why): the script's error is then only the Java error that
    followed, so its traceback is printed only with ``verbose`` (the caller tells the reason).
    """
    with _script_environment(app, args, py_files):
        try:
            runpy.run_path(app, run_name="__main__")
        except SystemExit as done:
            return exit_code(done.code, console)
        except Terminated as stopped:  # a KeyboardInterrupt too: before it
            return 128 + stopped.signum
        except KeyboardInterrupt:
            if verbose:
                traceback.print_exc()
            return INTERRUPTED
        except BaseException as error:
            on_exception(error)
            if failure() is None or verbose:
                traceback.print_exc()
            return 1
    return 0


def exit_code(code: object, console: Console) -> int:
    """``sys.exit``'s rules: None is 0, an int is itself, anything else is printed and means 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    console.info(str(code))
    return 1


@contextmanager
def _script_environment(app: str, args: Sequence[str], py_files: Sequence[str]) -> Iterator[None]:
    """``sys.argv`` and ``sys.path`` as ``python app`` with spark-submit's PYTHONPATH would have them.

    A ``.py`` cannot be on ``sys.path`` itself: like spark-submit (SPARK-24384), such files are copied
    into a directory of their own that goes on the path; archives go on the path as they are.
    """
    saved_argv, saved_path = sys.argv, list(sys.path)
    with tempfile.TemporaryDirectory(prefix="k8s-backend-py-files-") as copies:
        entries = []
        for path in py_files:
            if path.endswith(".py"):
                shutil.copy(path, copies)
                if copies not in entries:
                    entries.append(copies)
            else:
                entries.append(path)
        sys.argv = [app, *args]
        sys.path[:0] = [os.path.dirname(app), *entries]
        try:
            yield
        finally:
            sys.argv = saved_argv
            sys.path[:] = saved_path
