"""``python -m pickscale.cli``: the ``pickscale`` command."""

import sys

from . import main

sys.exit(main())
