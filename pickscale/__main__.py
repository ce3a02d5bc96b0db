"""``python -m pickscale``: the ``pickscale`` command (as ``python -m pickscale.cli``)."""

import sys

if __name__ == "__main__":  # not when a test collector imports the module
    from .cli import main

    sys.exit(main())
