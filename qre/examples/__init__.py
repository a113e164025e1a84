"""The bundled sample data: queries, a hand-written DT and event files (package data).

Shipped inside the wheel, so ``python -m qre.demo`` and ``python -m spark_udf.demo``
run from any installation, not only from a checkout. The files:

=========================  ===================================================
``events.csv``             ``tag,value``: amounts and resets (``qre.demo``)
``running_sum.json``       a DT: the sum of the amounts since the last reset
``logins.csv``             ``user,ts,tag``: logins, out of time order
``failed_since_ok.qre``    did a login fail since the last successful one?
``last_five.qre``          is the mean of the last five readings more than two
                           standard deviations above the mean so far? (§5.3)
``last_five_core.qre``     the same query in core syntax, without sugar
``two_days.qre``           is the mean of the last five readings always more than
                           two standard deviations above the mean over the last
                           two days? (§5.3 exactly as stated: sliding windows)
``sum_since_alarm.py``     a streaming algorithm (§5.4.3): the sum of the values,
                           present while an alarm holds
=========================  ===================================================

>>> read_text("failed_since_ok.qre").splitlines()[1]
'alphabet ok, fail;'
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from importlib import resources
from pathlib import Path

__all__ = ["NAMES", "as_file", "read_text"]

NAMES = ("events.csv", "running_sum.json", "logins.csv", "failed_since_ok.qre",
         "last_five.qre", "last_five_core.qre", "two_days.qre", "sum_since_alarm.py")
"""The bundled files."""


def _resource(name: str) -> resources.abc.Traversable:
    if name not in NAMES:
        raise ValueError(f"no bundled example {name!r}; there are {', '.join(NAMES)}")
    return resources.files(__name__).joinpath(name)


def read_text(name: str) -> str:
    """The text of a bundled file."""
    return _resource(name).read_text(encoding="utf-8")


def as_file(name: str) -> AbstractContextManager[Path]:
    """A context manager giving a real file path for a bundled file (for readers that
    need one, such as Spark's CSV reader)."""
    return resources.as_file(_resource(name))
