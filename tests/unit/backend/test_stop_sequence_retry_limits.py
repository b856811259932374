"""Background retries give up on errors that waiting cannot fix, and hand the client back when done."""

from __future__ import annotations

from collections.abc import Callable

from k8s_backend.common.stop_sequence import StopSequence
from k8s_backend.kube.port import ApiError, ForbiddenError, is_retryable


def _retryable(error: BaseException) -> bool:
    return not isinstance(error, ApiError) or is_retryable(error)


def test_a_forbidden_delete_is_not_retried_in_the_background() -> None:
    sleeps: list[float] = []
    spawned: list[str] = []

    def forbidden() -> None:
        raise ForbiddenError("pods is forbidden: cannot deletecollection")

    def spawn(name: str, target: Callable[[], None]) -> None:
        spawned.append(name)
        target()

    seq = StopSequence(
        [("delete the executor pods", forbidden)],
        sleep=sleeps.append,
        background=("delete the executor pods",),
        retryable=_retryable,
        spawn=spawn,
    )
    seq.run()
    assert spawned == []
    assert len(sleeps) == 2  # only the foreground attempts' backoff


def test_background_retries_are_bounded() -> None:
    attempts: list[int] = []

    def down() -> None:
        attempts.append(1)
        raise ConnectionError("api down")

    seq = StopSequence(
        [("delete the executor pods", down)],
        sleep=lambda _: None,
        background=("delete the executor pods",),
        background_attempts=5,
        spawn=lambda _name, target: target(),
    )
    seq.run()
    assert len(attempts) == 3 + 5
    assert seq.retrying == []


def test_the_client_is_closed_once_the_last_background_retry_succeeds() -> None:
    closed: list[int] = []
    attempts: list[int] = []

    def flaky() -> None:
        attempts.append(1)
        if len(attempts) <= 4:
            raise ConnectionError("api down")

    seq = StopSequence(
        [("delete the executor pods", flaky)],
        sleep=lambda _: None,
        background=("delete the executor pods",),
        on_retries_done=lambda: closed.append(1),
        spawn=lambda _name, target: target(),
    )
    seq.run()
    assert "delete the executor pods" in seq.completed
    assert closed == [1] and seq.retrying == []
