"""The management commands printed after a submission, written so that they work as printed: they
name the same API server and the same submission credentials the submission used."""

from __future__ import annotations

import re
import shlex

from k8s_backend.cli.submission import Submission
from k8s_backend.kube.masters import MasterKind

# How the submission reached the cluster besides the master: its credentials (the submission family,
# else the client-mode one, as the commands read them) and client settings. Not the driver's own.
_CONNECTION = re.compile(
    r"spark\.kubernetes\.authenticate\.(submission\.)?"
    r"(oauthToken|oauthTokenFile|caCertFile|clientKeyFile|clientCertFile)"
    r"|spark\.kubernetes\.(context|trust\.certificates)"
)


TOKEN_PLACEHOLDER = "<the token you passed>"


def manage_command(sub: Submission, command: str, submission_id: str) -> str:
    """``k8s-backend status|kill [--master M] [--conf ...] ID`` for this submission's cluster.

    The kubeconfig or in-cluster default (``pyk8s://``) needs no master. Credentials the user passed as
    properties are repeated, files by path; a token value is never printed (logs and terminals keep what
    they show): :data:`TOKEN_PLACEHOLDER` stands in for it.
    """
    words = ["k8s-backend", command]
    if sub.master_kind is MasterKind.API_SERVER:
        words += ["--master", sub.master]
    for key, value in sorted(sub.properties.items()):
        if _CONNECTION.fullmatch(key):
            words += ["--conf", f"{key}={TOKEN_PLACEHOLDER if key.endswith('oauthToken') else value}"]
    words.append(submission_id)
    return shlex.join(words)
