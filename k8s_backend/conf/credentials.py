"""Which property names hold credentials, whatever ``spark.redaction.regex`` says.

Spark redacts the keys its redaction pattern matches (``secret|password|token|access.key`` by default).
A token under a misspelt key (``spark.kubernetes.authenticate.oauthTokn``) matches nothing, so it was
printed in the clear by ``repr(KubernetesConf)``. Here a key is a credential's when its name contains
one of the credential words, or when one of the words of its name is a near miss of one (``Tokn``,
``pasword``, ``secert``). Name matching only: no parsing, so the model may use it.
"""

from __future__ import annotations

import difflib
import functools
import re

CREDENTIAL_WORDS = ("token", "secret", "password", "passwd", "credential", "credentials", "key")
_ANYWHERE = re.compile("|".join(CREDENTIAL_WORDS), re.IGNORECASE)
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
NEAR_MISS = 0.8
"""How close a word must be to a credential word to count as a misspelling of it (difflib's ratio:
"tokn" is 0.89 from "token"; "template" is 0.46)."""


@functools.lru_cache(maxsize=4096)  # reprs and logs ask about the same few names again and again
def looks_like_credential(name: str) -> bool:
    """Whether ``name`` looks like the key of a credential (its value is redacted in reprs and logs)."""
    if _ANYWHERE.search(name):
        return True
    for word in _WORDS.findall(name):
        lower = word.lower()
        if len(lower) >= 3 and any(
            difflib.SequenceMatcher(None, lower, known).ratio() >= NEAR_MISS for known in CREDENTIAL_WORDS
        ):
            return True
    return False
