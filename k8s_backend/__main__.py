"""``python -m k8s_backend``: the ``k8s-backend`` command, for when its script is not on PATH."""

from __future__ import annotations

import sys

from k8s_backend.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
