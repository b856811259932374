"""``spark.kubernetes.driver.annotateExitException`` (Spark 4.1+, default false): when the application
ends with an exception, its text goes onto the driver pod as the annotation ``spark.exit-exception``, so
``kubectl describe pod`` tells why the driver failed (Spark's SparkKubernetesDiagnosticsSetter).

As Spark: only when the key is true and the driver pod's name is known
(``spark.kubernetes.driver.pod.name``: always in cluster mode), and the text is abbreviated to 64 KiB.
Spark stringifies the Java exception thrown out of the application's main; here the application is a
Python script, so the text is the Python traceback of the exception it did not catch (an exit through
``sys.exit`` or a signal is no exception, as in Spark). The limit is counted in UTF-8 bytes, which
Spark counts in characters: a 64 Ki-character text of multi-byte characters could pass the API
server's 256 KiB limit on a pod's annotations.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping

import attrs

from k8s_backend.conf.units import parse_bool
from k8s_backend.kube.port import PODS, KubernetesApi, Obj

ANNOTATE_KEY = "spark.kubernetes.driver.annotateExitException"
POD_NAME_KEY = "spark.kubernetes.driver.pod.name"
EXIT_EXCEPTION_ANNOTATION = "spark.exit-exception"
LIMIT_BYTES = 64 * 1024
_ELLIPSIS = "..."


@attrs.frozen
class ExitAnnotation:
    """The patch that writes the exit exception on the driver pod."""

    namespace: str
    pod: str
    patch: Obj


def abbreviate(text: str, limit: int = LIMIT_BYTES) -> str:
    """``text`` if it fits in ``limit`` UTF-8 bytes, else its start and ``...`` within them (Spark's
    abbreviate, in bytes; a character cut in two is dropped)."""
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    return encoded[: limit - len(_ELLIPSIS)].decode("utf-8", errors="ignore") + _ELLIPSIS


def exception_text(error: BaseException) -> str:
    """The traceback Python prints for ``error`` (Spark's stringifyException)."""
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))


def exit_annotation(properties: Mapping[str, str], namespace: str, text: str) -> ExitAnnotation | None:
    """The annotation to write, or None when the key is off or no driver pod is named. A bad value of
    the key is a :class:`~k8s_backend.errors.ConfigError` naming it."""
    if not parse_bool(properties.get(ANNOTATE_KEY, "false"), key=ANNOTATE_KEY):
        return None
    pod = properties.get(POD_NAME_KEY)
    if not pod:
        return None
    patch: Obj = {"metadata": {"annotations": {EXIT_EXCEPTION_ANNOTATION: abbreviate(text)}}}
    return ExitAnnotation(namespace=namespace, pod=pod, patch=patch)


def write_exit_annotation(api: KubernetesApi, annotation: ExitAnnotation) -> None:
    """Merge-patch the annotation onto the driver pod (its other annotations are kept)."""
    api.patch(PODS, annotation.namespace, annotation.pod, annotation.patch)
