"""A container's preStop hook, run as a kubelet runs it when the pod is deleted: the hook first, bounded
by the grace period, then SIGTERM with what is left of that period (never less than two seconds, the
kubelet's ``minimumGracePeriodInSeconds``). A hook that fails or times out is reported as a
``FailedPreStopHook`` Event, and the container is stopped all the same.

``exec`` hooks run as local processes, translated as the container's own command is (the pod's
environment, its volumes mapped onto local directories, the container's working directory); ``sleep``
hooks wait. A hook whose program does not exist on this machine (``/opt/decom.sh`` of the Spark image)
is skipped, as a container whose command is unknown here idles: the process kubelet cannot know an
image's files. ``httpGet`` hooks are not run (see docs/local-cluster.md, known differences).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import attrs

from k8s_backend.local.kubelet.container import LocalCommand
from k8s_backend.local.kubelet.processes import ProcessHandle, ProcessSupervisor

log = logging.getLogger(__name__)

Obj = dict[str, Any]

MINIMUM_GRACE_SECONDS = 2.0  # the kubelet's minimumGracePeriodInSeconds: SIGTERM always gets this long
_OUTPUT_BYTES = 2048


@attrs.frozen
class PreStopHook:
    """What to run before a container is stopped: a local command (``exec``) or a pause (``sleep``)."""

    kind: Literal["exec", "sleep"]
    command: LocalCommand | None = None
    seconds: float = 0.0
    shown: str = ""  # the hook's command as the pod spec has it, for messages


def pre_stop_spec(container: Obj) -> Obj:
    """The container's ``lifecycle.preStop`` handler ({} when it has none)."""
    return dict((container.get("lifecycle") or {}).get("preStop") or {})


def sleep_hook(handler: Obj) -> PreStopHook | None:
    """The hook of a ``sleep`` handler (the API server validated its seconds), or None for another kind."""
    if "sleep" not in handler:
        return None
    seconds = (handler.get("sleep") or {}).get("seconds") or 0
    return PreStopHook("sleep", seconds=float(seconds), shown=f"sleep {seconds}")


def exec_command(handler: Obj) -> list[str] | None:
    """The command of an ``exec`` handler, or None for another kind."""
    if "exec" not in handler:
        return None
    return [str(part) for part in (handler.get("exec") or {}).get("command") or []]


def remaining_grace(grace: float, elapsed: float) -> float:
    """The grace period SIGTERM gets after a hook that took ``elapsed`` seconds of ``grace``."""
    return max(MINIMUM_GRACE_SECONDS, grace - elapsed)


def hook_failure(hook: PreStopHook, container: str, pod: str, error: str, output: str) -> str:
    """The ``FailedPreStopHook`` Event's message, worded as the kubelet's."""
    return (
        f'Exec lifecycle hook ({hook.shown}) for Container "{container}" in Pod "{pod}" failed - '
        f"error: {error}, message: {output!r}"
    )


class PreStopRunner:
    """Runs one container's preStop hook on a thread of its own, then stops the container.

    ``on_failure(error, output)`` is called (from that thread) when the hook fails or outlives the grace
    period; the hook's process belongs to ``supervisor``, so stopping the kubelet stops it too.
    """

    def __init__(self, supervisor: ProcessSupervisor, *, monotonic: Callable[[], float]) -> None:
        self._supervisor = supervisor
        self._monotonic = monotonic

    def start(
        self,
        hook: PreStopHook,
        target: ProcessHandle,
        grace: float,
        log_path: Path,
        on_failure: Callable[[str, str], None],
    ) -> None:
        """Run ``hook`` (at most ``grace`` seconds), then SIGTERM ``target`` with the rest of ``grace``."""
        thread = threading.Thread(
            target=self._run, args=(hook, target, grace, log_path, on_failure),
            name=f"kubelet-prestop-{target.pid}", daemon=True,
        )  # fmt: skip
        thread.start()

    def _run(
        self,
        hook: PreStopHook,
        target: ProcessHandle,
        grace: float,
        log_path: Path,
        on_failure: Callable[[str, str], None],
    ) -> None:
        started = self._monotonic()
        try:
            if hook.kind == "sleep":
                target.exited.wait(min(hook.seconds, grace))  # a container that ends meanwhile ends the wait
            elif hook.command is not None:
                failure = self._exec(hook, hook.command, grace, log_path)
                if failure is not None:
                    on_failure(*failure)
        except Exception:  # the container must be stopped whatever happened to its hook
            log.exception("preStop hook of pid %s failed", target.pid)
        finally:
            target.terminate(remaining_grace(grace, self._monotonic() - started))

    def _exec(
        self, hook: PreStopHook, command: LocalCommand, grace: float, log_path: Path
    ) -> tuple[str, str] | None:
        """Run an exec hook; (error, output) if it failed."""
        log_path.unlink(missing_ok=True)  # this hook's output only, for the failure message
        try:
            handle = self._supervisor.start(
                command.argv, env=command.env, cwd=command.cwd, log_path=log_path, memory_limit=None,
                on_exit=lambda _: None,
            )  # fmt: skip
        except (OSError, RuntimeError) as error:
            return str(error), ""
        status = handle.wait(grace)
        if status is None:
            handle.kill()
            handle.wait(5.0)
            return f"command '{hook.shown}' did not end within the grace period of {grace:g} s", ""
        if status.exit_code != 0:
            return f"command '{hook.shown}' exited with {status.exit_code}", _tail(log_path)
        return None


def _tail(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-_OUTPUT_BYTES:].decode("utf-8", "replace")
