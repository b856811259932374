"""JVM options for the executor: the user's extraJavaOptions and the confs executors need at startup."""

from __future__ import annotations

import functools
from collections.abc import Mapping

from k8s_backend.errors import ConfigError

JAVA_OPTIONS_KEY = "spark.executor.extraJavaOptions"
AUTH_SECRET_KEY = "spark.authenticate.secret"


def split_command_string(text: str) -> list[str]:
    """Split like a shell, as Spark's Utils.splitCommandString does.

    Words are separated by whitespace; single quotes keep everything literally; inside double quotes a
    backslash takes the next character literally; outside quotes a backslash is an ordinary character.
    An unterminated quote is an error.
    """
    return list(_split(text))


# Every executor pod splits the same text, a character at a time: a SparkContext puts its JVM module options
# (19 of them, about 1 KB) in spark.executor.extraJavaOptions. That was 4 % of the driver's Python while it
# created pods. Texts with {{EXECUTOR_ID}} differ per pod and just miss.
@functools.lru_cache(maxsize=64)
def _split(text: str) -> tuple[str, ...]:
    words: list[str] = []
    word: list[str] = []
    in_word = in_single = in_double = False
    i = 0
    while i < len(text):
        char = text[i]
        if in_double:
            if char == '"':
                in_double = False
            elif char == "\\" and i + 1 < len(text):
                word.append(text[i + 1])
                i += 1
            else:
                word.append(char)
        elif in_single:
            if char == "'":
                in_single = False
            else:
                word.append(char)
        elif char in "\"'":
            in_word = True
            in_double, in_single = char == '"', char == "'"
        elif not char.isspace():
            word.append(char)
            in_word = True
        elif in_word:
            words.append("".join(word))
            word.clear()
            in_word = False
        i += 1
    if in_single or in_double:
        raise ConfigError(
            f"{JAVA_OPTIONS_KEY}={text!r} has an unterminated quote: close it or escape it",
            key=JAVA_OPTIONS_KEY,
            value=text,
        )
    if in_word:
        words.append("".join(word))
    return tuple(words)


def is_executor_startup_conf(key: str) -> bool:
    """Spark's SparkConf.isExecutorStartupConf: what an executor needs before it can reach the driver."""
    return (
        (key.startswith("spark.auth") and key != AUTH_SECRET_KEY)
        or key.startswith(("spark.rpc", "spark.network", "spark.port."))
        # SSL settings are needed for RPC; passwords are propagated separately.
        or (key.startswith("spark.ssl") and "Password" not in key)
        or (key.startswith("spark.") and key.endswith(".port"))
    )


def startup_java_opts(properties: Mapping[str, object]) -> list[str]:
    """``-D<key>=<value>`` for every executor startup conf, sorted by key for a stable pod spec."""
    return [f"-D{key}={properties[key]}" for key in sorted(properties) if is_executor_startup_conf(key)]
