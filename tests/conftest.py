"""Settings for the whole test session."""

from __future__ import annotations

import signal

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # A test run started in the background of a script (`tox -e py &`) inherits SIGINT ignored, and so
    # would every process the tests start: the Ctrl-C some tests send them would then do nothing. A
    # handler (unlike an ignored signal) is reset to the default in a child, as in a terminal.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Long property-based runs only when asked for by name (`-m slow`): the fast tier's and the README's
    # marker expressions do not mention them, and must not run them.
    if "slow" in (config.option.markexpr or "").replace("not slow", ""):
        return
    skip = pytest.mark.skip(reason="a long run: select it with -m slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _unknown_keys_warned_afresh() -> None:
    # Unknown keys are warned about once per process; each test starts as a fresh process would.
    from k8s_backend.conf.parse import forget_told_unknown_keys

    forget_told_unknown_keys()
