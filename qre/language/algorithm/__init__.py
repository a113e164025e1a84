"""Regular streaming algorithms as DTs (seed 003, §5.4.3, Theorem 5.11).

Pipeline position: a second front end beside the query language. Takes the
text of a streaming algorithm in a Python subset (:mod:`.parse`: functions
``init``, ``update(tag, cur)`` and ``output``; Boolean variables that depend
on the tags only — the regularity restriction), returns its IR
(:mod:`.ir`) and then a DT (:mod:`.to_dt`) that the rest of the project runs,
checks and composes like a compiled query's.

Costs: parsing and translation are one pass each, linear in the text; the DT
is linear in the algorithm plus one copy per tag and variable.
"""

from collections.abc import Sequence

from dt.model import DT

from .ir import Algorithm
from .parse import parse_algorithm
from .to_dt import algorithm_to_dt

__all__ = ["Algorithm", "algorithm_dt", "algorithm_to_dt", "parse_algorithm"]


def algorithm_dt(text: str, alphabet: Sequence[str] | None = None) -> DT:
    """The DT of the algorithm ``text`` (parse, then translate)."""
    return algorithm_to_dt(parse_algorithm(text, alphabet))
