"""How the command names files: ``local://`` paths in the image, local paths and ``file://`` URIs,
comma-separated lists, and the key that names where cluster mode uploads local files."""

from __future__ import annotations

from urllib.parse import urlsplit

LOCAL_SCHEME = "local://"
UPLOAD_PATH_KEY = "spark.kubernetes.file.upload.path"


def split_list(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def local_path(uri: str) -> str | None:
    """The local file a path or ``file://`` URI names; None for ``local://`` and remote URIs."""
    if uri.startswith(LOCAL_SCHEME):
        return None
    parts = urlsplit(uri)
    if parts.scheme == "file":
        return parts.path
    if parts.scheme and len(parts.scheme) > 1:  # one letter: a Windows drive
        return None
    return uri


def is_remote(uri: str) -> bool:
    """A URI of another scheme than ``local://`` and ``file:`` (``hdfs://``, ``s3a://``, ``viewfs://``...)."""
    return not uri.startswith(LOCAL_SCHEME) and local_path(uri) is None
