"""What the driver ConfigMap carries in cluster mode: ``spark.properties``, the submitting machine's conf
files, and the application's local files (the application, ``--py-files``, ``--files``).

Local files travel in the ConfigMap, so no shared storage is needed; ``local://`` paths name files
already in the image and are used as they are. A ConfigMap is small (``spark.kubernetes.configMap.maxSize``,
1 MiB by default, the Kubernetes limit): application files that do not fit are refused with the fix;
conf files that do not fit are skipped with a warning, as Spark does. With
``spark.kubernetes.file.upload.path`` the local files are uploaded instead
(:mod:`k8s_backend.cli.submit.uploads`)
and their uploaded URIs are passed on as they are.
"""

from __future__ import annotations

import base64
import logging
import os
import re
from collections.abc import Collection, Mapping, Sequence

import attrs

from k8s_backend.cli.common.errors import UsageError
from k8s_backend.cli.submit.submission import Submission
from k8s_backend.cli.submit.uris import LOCAL_SCHEME, UPLOAD_PATH_KEY, local_path, split_list
from k8s_backend.kube.port import Obj
from k8s_backend.pods.config_map import java_properties, load_conf_dir_files
from k8s_backend.pods.constants import CONF_FILE_MODE, SPARK_CONF_FILE_NAME
from k8s_backend.pods.driver.basic import APP_FILES_DIR as APP_FILES_DIR

log = logging.getLogger(__name__)

MAX_SIZE_KEY = "spark.kubernetes.configMap.maxSize"
_KEY_CHARS = re.compile(r"[^-._a-zA-Z0-9]")


@attrs.frozen
class ShippedFile:
    """A local file carried in the ConfigMap: its key there and its path in the driver container."""

    source: str
    key: str
    file_name: str
    content: bytes

    @property
    def pod_path(self) -> str:
        return f"{APP_FILES_DIR}/{self.file_name}"

    def encoded(self) -> tuple[str, str]:
        """``("data", text)`` for UTF-8 text, else ``("binaryData", base64)``."""
        try:
            return "data", self.content.decode("utf-8")
        except UnicodeDecodeError:
            return "binaryData", base64.b64encode(self.content).decode("ascii")

    @property
    def size(self) -> int:
        return len(self.key) + len(self.encoded()[1])


@attrs.frozen
class DriverFiles:
    """Where each application file is inside the driver container, and the files to ship."""

    app: str
    py_files: tuple[str, ...]
    files: tuple[str, ...]
    shipped: tuple[ShippedFile, ...]


def plan_submission_files(sub: Submission) -> DriverFiles:
    """:func:`plan_files` for the submission's application, ``--py-files`` and ``--files``."""
    props = sub.properties
    return plan_files(
        sub.app,
        split_list(props.get("spark.submit.pyFiles", "")),
        split_list(props.get("spark.files", "")),
        uploaded=sub.uploads.targets if sub.uploads is not None else frozenset(),
    )


def plan_files(
    app: str, py_files: Sequence[str], files: Sequence[str], *, uploaded: Collection[str] = ()
) -> DriverFiles:
    """Read the local files to ship; ``local://`` URIs and ``uploaded`` ones stay as they are."""
    shipped: dict[str, ShippedFile] = {}

    def place(uri: str) -> str:
        if uri.startswith(LOCAL_SCHEME) or uri in uploaded:
            return uri
        path = local_path(uri)
        if path is None:  # build_submission refuses remote URIs before this runs
            raise UsageError(f"{uri}: only local files and local:// paths are supported")
        name = os.path.basename(path)
        existing = shipped.get(name)
        if existing is not None:
            if os.path.abspath(existing.source) == os.path.abspath(path):
                return existing.pod_path
            raise UsageError(
                f"two application files are named {name} ({existing.source} and {path}); they would land "
                f"at the same path in the driver ({APP_FILES_DIR}/{name}): rename one"
            )
        try:
            with open(path, "rb") as handle:
                content = handle.read()
        except OSError as error:
            raise UsageError(f"{uri}: cannot be read ({error.strerror})") from None
        shipped[name] = ShippedFile(path, "file." + _KEY_CHARS.sub("_", name), name, content)
        return shipped[name].pod_path

    placed_app = place(app)
    placed_py = tuple(place(uri) for uri in py_files)
    placed_files = tuple(place(uri) for uri in files)
    return DriverFiles(placed_app, placed_py, placed_files, tuple(shipped.values()))


def config_map_content(
    properties: Mapping[str, str],
    files: DriverFiles,
    *,
    conf_dir: str | None,
    max_size: int,
    name: str,
) -> tuple[dict[str, str], dict[str, str]]:
    """``(data, binaryData)`` of the driver ConfigMap; :class:`UsageError` if the application files
    alone do not fit in ``max_size``."""
    spark_properties = java_properties(
        dict(sorted(properties.items())), f"Spark properties of the driver (config map {name})"
    )
    used = len(SPARK_CONF_FILE_NAME) + len(spark_properties)
    app_bytes = sum(f.size for f in files.shipped)
    if used + app_bytes > max_size:
        sizes = ", ".join(f"{f.source}: {len(f.content)} bytes" for f in files.shipped)
        raise UsageError(
            f"the application files are too big to travel in the driver's ConfigMap ({sizes}; "
            f"{used + app_bytes} bytes with the Spark properties, more than {MAX_SIZE_KEY}={max_size}). "
            f"Set {UPLOAD_PATH_KEY} to a directory the pods share (e.g. file:///shared/uploads) to upload "
            "them instead, as spark-submit does, put big files in the image and pass them as "
            f"local:///path/in/image, or raise {MAX_SIZE_KEY} if your API server accepts larger objects"
        )
    data: dict[str, str] = {SPARK_CONF_FILE_NAME: spark_properties}
    binary: dict[str, str] = {}
    for shipped in files.shipped:
        field, value = shipped.encoded()
        (data if field == "data" else binary)[shipped.key] = value
    budget = max_size - used - app_bytes
    for conf_name, content in load_conf_dir_files(conf_dir, budget).items():
        data.setdefault(conf_name, content)
    return data, binary


def conf_items(data: Mapping[str, str], files: DriverFiles) -> list[Obj]:
    """Volume items for ``/opt/spark/conf``: ``spark.properties`` and the conf files (not app files)."""
    shipped = {f.key for f in files.shipped}
    return [{"key": key, "path": key, "mode": CONF_FILE_MODE} for key in sorted(data) if key not in shipped]


def file_items(files: DriverFiles) -> list[Obj]:
    """Volume items for the application files directory."""
    return [{"key": f.key, "path": f.file_name, "mode": CONF_FILE_MODE} for f in files.shipped]
