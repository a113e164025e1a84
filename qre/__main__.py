"""``python -m qre``: the ``qre`` command line (:mod:`qre.cli`)."""

from .cli import console

console()
