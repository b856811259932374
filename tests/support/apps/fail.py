"""An application that fails: its exit code must reach the user."""

import sys

if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(int(sys.argv[1]))
    raise RuntimeError("the application failed on purpose")
