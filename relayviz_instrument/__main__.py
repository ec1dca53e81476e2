"""``python -m relayviz_instrument``: the same as the ``relayviz`` command."""

import sys

from .cli import main

sys.exit(main())
