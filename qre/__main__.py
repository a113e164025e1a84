"""``python -m qre``: the ``qre`` command line (:mod:`qre.cli`)."""

import sys

from .cli import main

sys.exit(main())
