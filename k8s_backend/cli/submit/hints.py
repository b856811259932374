"""The management commands printed after a submission, written so that they work as printed: they
name the same API server and the same submission credentials the submission used.

A token given inline (``--conf ...oauthToken=...``) is never printed (terminals and logs keep what
they show): it is saved to a file readable by this user only, ``<cache>/tokens/<sha256 of the token,
16 hex digits>`` (``$K8S_BACKEND_CACHE_DIR``, else ``~/.cache/k8s_backend``), and the command names
that file (``...oauthTokenFile=PATH``), which the next command reads as the submission did the token.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path

from k8s_backend.cli.submit.submission import Submission
from k8s_backend.kube.masters import MasterKind

# How the submission reached the cluster besides the master: its credentials (the submission family,
# else the client-mode one, as the commands read them) and client settings. Not the driver's own.
_CONNECTION = re.compile(
    r"spark\.kubernetes\.authenticate\.(submission\.)?"
    r"(oauthToken|oauthTokenFile|caCertFile|clientKeyFile|clientCertFile)"
    r"|spark\.kubernetes\.trust\.certificates"
)
# Given as the commands' own flags, as kubectl's.
_FLAGS = {"spark.kubernetes.kubeconfig": "--kubeconfig", "spark.kubernetes.context": "--context"}
CACHE_ENV = "K8S_BACKEND_CACHE_DIR"


def token_dir(environ: Mapping[str, str]) -> Path:
    """Where inline tokens are saved for the printed commands."""
    cache = environ.get(CACHE_ENV) or os.path.join(
        environ.get("HOME") or os.path.expanduser("~"), ".cache", "k8s_backend"
    )
    return Path(cache) / "tokens"


def save_token(token: str, directory: Path) -> Path:
    """Write ``token`` to a file only this user can read (the directory too); the same token always
    gets the same file, so repeated submissions leave one."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(directory, 0o700)
    path = directory / hashlib.sha256(token.encode()).hexdigest()[:16]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(token)
    return path


def manage_command(
    sub: Submission, command: str, submission_id: str, environ: Mapping[str, str] | None = None
) -> str:
    """``k8s-backend status|kill [--master M] [--kubeconfig K] [--context C] [--conf ...] ID`` for this
    submission's cluster.

    The kubeconfig or in-cluster default (``pyk8s://``) needs no master. Credentials the user passed as
    properties are repeated, files by path, an inline token by the file it is saved to (see the module
    doc; ``environ`` gives the cache directory).
    """
    words = ["k8s-backend", command]
    if sub.master_kind is MasterKind.API_SERVER:
        words += ["--master", sub.master]
    for key, flag in _FLAGS.items():
        value = sub.properties.get(key, "").strip()
        if value:
            words += [flag, os.path.abspath(value) if key.endswith("kubeconfig") else value]
    conf = {key: value for key, value in sorted(sub.properties.items()) if _CONNECTION.fullmatch(key)}
    for key in [key for key in conf if key.endswith("oauthToken")]:
        # The token wins over a token file of its family: the command reads the same token, from a file.
        saved = save_token(conf.pop(key), token_dir(os.environ if environ is None else environ))
        conf[key + "File"] = str(saved)
    for key, value in conf.items():
        words += ["--conf", f"{key}={value}"]
    words.append(submission_id)
    return shlex.join(words)
