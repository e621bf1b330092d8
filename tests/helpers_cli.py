"""Running the command line in the test process."""

from __future__ import annotations

import sys

from cogwm.cli.main import main


def cogwm(*args: object) -> int:
    """Run ``cogwm ARGS`` (each argument as ``str``) in this process; its exit status."""
    old = sys.argv
    sys.argv = ["cogwm", *(str(a) for a in args)]
    try:
        main()
    except SystemExit as exc:
        return int(exc.code or 0)
    finally:
        sys.argv = old
    return 0
