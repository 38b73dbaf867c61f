"""``python -m hf_symbolinv.commands``: the same as the ``symbolinv`` console script."""

import sys

from .cli import main

sys.exit(main())
