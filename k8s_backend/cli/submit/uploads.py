"""``spark.kubernetes.file.upload.path``: cluster mode's local dependencies uploaded where the pods read them.

As spark-submit does (``KubernetesUtils.uploadAndTransformFileUris``), with the key set, cluster mode
uploads the local application, ``--py-files``, ``--files``, ``--jars`` and ``--archives`` to
``<upload path>/spark-upload-<uuid>/<file name>`` and gives the driver the uploaded URIs instead (an
archive keeps its ``#alias``). ``local://`` paths and remote URIs are passed as they are.

The planning (:func:`stage`, which ``build_submission`` runs) writes nothing: it checks the upload path and
the files and names the targets, so bad input is a usage error before anything exists anywhere. The
copies (:func:`uploaded`) run after the permission checks, just before the driver's objects are created;
if a copy or the creation fails, the upload directory is deleted again.

Unlike Spark (one directory per file, never deleted), a submission uploads into one directory, so two
files of the same name are refused, and :func:`finished` deletes it once the driver has ended while
the command waited; otherwise the command names the directory that stays.

``file://`` URIs and absolute paths (a directory the driver and executor pods share, e.g. a mounted
volume) are copied here; any other scheme goes through Hadoop's FileSystem in a JVM of Spark's own
classpath, configured by the ``spark.hadoop.*`` properties, as spark-submit uploads
(:class:`HadoopUploader`, :mod:`k8s_backend.spark.hadoop_fs`). :class:`Uploader` is the seam; register
another in :data:`UPLOADERS`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Protocol
from urllib.parse import urlsplit

import attrs

from k8s_backend.cli.common.console import Console
from k8s_backend.cli.common.errors import UsageError
from k8s_backend.cli.submit.uris import LOCAL_SCHEME, UPLOAD_PATH_KEY, local_path, split_list
from k8s_backend.errors import K8sBackendError

UPLOAD_DIR_PREFIX = "spark-upload-"
# The lists uploaded, with the flag that names each in messages; archives may carry a #alias.
UPLOADED_LISTS = (
    ("--jars", "spark.jars"),
    ("--files", "spark.files"),
    ("--archives", "spark.archives"),
    ("--py-files", "spark.submit.pyFiles"),
)


class Uploader(Protocol):
    """Copies local files to one kind of storage the driver and executors read (one URI scheme)."""

    def check(self, base: str) -> None:
        """Raise :class:`UsageError` if files cannot be uploaded under ``base``; writes nothing."""

    def upload(self, source: str, target: str) -> None:
        """Copy the local file ``source`` to the URI ``target``, creating its directory (``OSError``)."""

    def delete(self, directory: str) -> None:
        """Delete the directory URI ``directory`` and its content (``OSError``)."""


def file_path(uri: str) -> str:
    """The local path of a ``file:`` URI or a plain path."""
    parts = urlsplit(uri)
    return parts.path if parts.scheme == "file" else uri


class FileUploader:
    """``file://`` URIs and absolute paths: a directory on this machine that the pods share."""

    def check(self, base: str) -> None:
        parts = urlsplit(base)
        path = file_path(base)
        if parts.scheme == "file" and parts.netloc not in ("", "localhost"):
            raise UsageError(
                f"{UPLOAD_PATH_KEY}={base}: a file:// URI names a directory on this machine; "
                f"write file:///path (no host {parts.netloc!r})"
            )
        if not os.path.isabs(path):
            raise UsageError(
                f"{UPLOAD_PATH_KEY}={base}: give an absolute path or file:///path of a directory the driver "
                "and executor pods share"
            )
        if not os.path.isdir(path):
            raise UsageError(
                f"{UPLOAD_PATH_KEY}={base}: {path} is not a directory on this machine; create it (on storage "
                "the driver and executor pods share, at the same path) or fix the key"
            )
        if not os.access(path, os.W_OK | os.X_OK):
            raise UsageError(f"{UPLOAD_PATH_KEY}={base}: {path} is not writable by this user")

    def upload(self, source: str, target: str) -> None:
        path = file_path(target)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.copyfile(source, path)

    def delete(self, directory: str) -> None:
        shutil.rmtree(file_path(directory))


class HadoopFileSystem(Protocol):
    """What :class:`HadoopUploader` uses of :class:`k8s_backend.spark.hadoop_fs.HadoopFileSystem`."""

    def is_directory(self, uri: str) -> bool: ...

    def copy_from_local(self, source: str, target: str) -> None: ...

    def copy_to_local(self, source: str, target: str) -> None: ...

    def delete(self, uri: str) -> None: ...


def open_hadoop(properties: Mapping[str, str]) -> HadoopFileSystem:
    """Hadoop's FileSystem in a JVM of Spark's classpath (only :mod:`k8s_backend.spark` touches pyspark)."""
    from k8s_backend.spark.hadoop_fs import HadoopFileSystem as JvmFileSystem

    return JvmFileSystem.launch(properties)


class HadoopUploader:
    """Any other scheme (``hdfs://``, ``viewfs://``, ``s3a://`` with its jars on the classpath...): Hadoop's
    FileSystem, configured by the submission's ``spark.hadoop.*`` properties, started on first use."""

    def __init__(self, properties: Mapping[str, str]) -> None:
        self._properties = dict(properties)
        self._fs: HadoopFileSystem | None = None

    def _filesystem(self) -> HadoopFileSystem:
        if self._fs is None:
            self._fs = open_hadoop(self._properties)
        return self._fs

    def check(self, base: str) -> None:
        try:
            fs = self._filesystem()
        except K8sBackendError as error:
            raise UsageError(f"{UPLOAD_PATH_KEY}={base}: {error}") from None
        try:
            directory = fs.is_directory(base)
        except FileNotFoundError:
            raise UsageError(
                f"{UPLOAD_PATH_KEY}={base}: no such directory; create it (where the driver and executor pods "
                "read) or fix the key"
            ) from None
        except OSError as error:
            raise UsageError(
                f"{UPLOAD_PATH_KEY}={base}: Hadoop's FileSystem cannot use it ({error}); check the URI, "
                "the spark.hadoop.* settings and that its FileSystem is on spark.driver.extraClassPath"
            ) from None
        if not directory:
            raise UsageError(f"{UPLOAD_PATH_KEY}={base}: not a directory")

    def upload(self, source: str, target: str) -> None:
        self._filesystem().copy_from_local(source, target)

    def delete(self, directory: str) -> None:
        self._filesystem().delete(directory)


# URI scheme ("" for a plain path) -> uploader; any other scheme: HadoopUploader.
UPLOADERS: dict[str, Callable[[Mapping[str, str]], Uploader]] = {
    "": lambda _: FileUploader(),
    "file": lambda _: FileUploader(),
}


def uploader_for(base: str, properties: Mapping[str, str] | None = None) -> Uploader:
    """The uploader for the upload path's scheme, with the submission's ``properties``."""
    scheme = urlsplit(base).scheme
    factory = UPLOADERS.get(scheme)
    if factory is None:
        return HadoopUploader(properties or {})
    return factory(properties or {})


@attrs.frozen
class Upload:
    """One local file and the URI it is uploaded to (without an archive's ``#alias``)."""

    source: str
    target: str


@attrs.frozen
class UploadPlan:
    """What a submission uploads, into ``directory`` (``<upload path>/spark-upload-<uuid>``)."""

    directory: str
    uploads: tuple[Upload, ...]
    uploader: Uploader = attrs.field(eq=False, repr=False)
    targets: frozenset[str] = frozenset()  # the URIs the rewritten properties name (#alias included)


class _Planner:
    """Assigns each local file its target, once per file; refuses two files with one name."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.by_name: dict[str, tuple[str, str, str]] = {}  # name -> (what, source, target)
        self.named: list[str] = []

    def rewrite(self, what: str, uri: str, *, alias: bool = False) -> str:
        if uri.startswith(LOCAL_SCHEME):
            return uri
        location, fragment = uri.split("#", 1) if alias and "#" in uri else (uri, "")
        path = local_path(location)
        if path is None:
            return uri  # remote: the driver and executors fetch it themselves
        if not os.path.isfile(path):
            problem = "not a regular file" if os.path.exists(path) else "no such file"
            raise UsageError(f"{what} {uri}: {problem}")
        name = os.path.basename(path)
        source = os.path.abspath(path)
        seen = self.by_name.get(name)
        if seen is not None and seen[1] != source:
            raise UsageError(
                f"{seen[0]} {seen[1]} and {what} {source} are both named {name}: they would be uploaded to "
                f"the same {self.directory}/{name} ({UPLOAD_PATH_KEY}); rename one"
            )
        target = seen[2] if seen is not None else f"{self.directory}/{name}"
        self.by_name.setdefault(name, (what, source, target))
        named = f"{target}#{fragment}" if fragment else target
        self.named.append(named)
        return named


@attrs.frozen
class Staged:
    """A submission's application and properties with its local files' URIs rewritten, and the plan."""

    app: str
    properties: Mapping[str, str]
    plan: UploadPlan | None


def stage(app: str, properties: Mapping[str, str], *, unique: str | None = None) -> Staged:
    """The local files' URIs rewritten to where they will be uploaded, and the plan to do it.

    Nothing is written; a bad upload path or file is a :class:`UsageError`. Without the key, all as given.
    """
    base = properties.get(UPLOAD_PATH_KEY, "").strip()
    if not base:
        return Staged(app, properties, None)
    uploader = uploader_for(base, properties)
    uploader.check(base)
    directory = f"{base.rstrip('/')}/{UPLOAD_DIR_PREFIX}{unique or uuid.uuid4()}"
    planner = _Planner(directory)
    rewritten_app = planner.rewrite("application", app)
    rewritten = dict(properties)
    for flag, key in UPLOADED_LISTS:
        entries = split_list(rewritten.get(key, ""))
        if entries:
            uris = [planner.rewrite(flag, e, alias=key == "spark.archives") for e in entries]
            rewritten[key] = ",".join(uris)
    sources = {target: source for _, source, target in planner.by_name.values()}
    plan = UploadPlan(
        directory, tuple(Upload(s, t) for t, s in sources.items()), uploader, frozenset(planner.named)
    )
    return Staged(rewritten_app, rewritten, plan if plan.uploads else None)


def upload(plan: UploadPlan, console: Console) -> None:
    """Copy the files; a failure deletes what was copied and is a one-line :class:`UsageError`."""
    console.info(f"Uploading {len(plan.uploads)} local file(s) to {plan.directory} ({UPLOAD_PATH_KEY})")
    for item in plan.uploads:
        try:
            plan.uploader.upload(item.source, item.target)
        except OSError as error:
            _delete(plan, console, quiet=True)
            raise UsageError(
                f"uploading {item.source} to {item.target} failed ({error.strerror or error}); "
                "nothing was created on the cluster"
            ) from None


@contextlib.contextmanager
def uploaded(plan: UploadPlan | None, console: Console) -> Iterator[None]:
    """Upload the plan's files, then run the block (creating the driver); if it fails, delete them."""
    if plan is None:
        yield
        return
    upload(plan, console)
    try:
        yield
    except BaseException:
        _delete(plan, console)
        raise


def finished(plan: UploadPlan | None, console: Console, code: int, *, ended: bool) -> int:
    """After the submission: delete the uploads if the driver ``ended``, else say where they stay."""
    if plan is None:
        return code
    if ended:
        _delete(plan, console)
    else:
        console.info(
            f"The uploaded files stay in {plan.directory} while the application runs; delete it when the "
            "application is done"
        )
    return code


def _delete(plan: UploadPlan, console: Console, *, quiet: bool = False) -> None:
    try:
        plan.uploader.delete(plan.directory)
    except FileNotFoundError:
        return
    except OSError as error:
        console.warning(f"could not delete the uploaded files in {plan.directory}: {error.strerror or error}")
        return
    if not quiet:
        console.info(f"Deleted the uploaded files in {plan.directory}")
