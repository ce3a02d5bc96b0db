"""``python -m pickscale``: the ``pickscale`` command (as ``python -m pickscale.cli``)."""

import sys

from .cli import main

if __name__ == "__main__":  # not when a test collector imports the module
    sys.exit(main())
