"""The match kernel of complex event recognition (issue 26).

Pipeline position: :class:`~dt.cer.pattern.MatchQuery` → its
:class:`~dt.cer.automaton.Automaton` → **tables** (:mod:`.tables`) → **kernel**
(:mod:`.kernel`, over the shared match graph of :mod:`.graph`) → matches.

Takes a query and a key's events (``sat`` bool[n, C], ``times`` int64[n] in δ); returns
its matches in emission order (:func:`.kernel.step_matches`: a part of its events, and
the state the next part resumes from; :func:`.kernel.run_keys`: many keys' complete
inputs in one compiled loop). Importing the package does not import Numba (only a run
does: :mod:`.kernel`). Costs: O(P + T) per event for P positions and T
transitions, plus the matches' enumeration (:mod:`.kernel`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dt.cer.automaton import automaton
from dt.cer.pattern import Match, MatchQuery

from .tables import MatchTables, match_tables

__all__ = ["MatchTables", "compile_query", "find_matches", "find_timeouts", "match_tables"]


def compile_query(query: MatchQuery) -> MatchTables:
    """The kernel's tables for ``query``."""
    return match_tables(query, automaton(query))


def find_matches(query: MatchQuery | MatchTables, sat: np.ndarray,
                 times: Sequence[int] | np.ndarray) -> list[Match]:
    """The kept matches of one key's events, in emission order, as :class:`Match`.

    >>> from dt.cer.pattern import Junction, MatchQuery, Seq, Var
    >>> q = MatchQuery(Seq((Var("a", 0), Var("b", 1)), (Junction(),)))
    >>> sat = np.array([[1, 0], [1, 0], [0, 1]], dtype=bool)
    >>> [m.events for m in find_matches(q, sat, [0, 1, 2])]
    [(0, 2), (1, 2)]
    """
    return _found(query, sat, times, timeouts=False)


def find_timeouts(query: MatchQuery | MatchTables, sat: np.ndarray,
                  times: Sequence[int] | np.ndarray) -> list[Match]:
    """The partial matches that time out (a query with ``timeouts``), in emission order,
    each with the time it timed out at (``stamp``)."""
    return _found(query, sat, times, timeouts=True)


def _found(query: MatchQuery | MatchTables, sat: np.ndarray,
           times: Sequence[int] | np.ndarray, *, timeouts: bool) -> list[Match]:
    from .kernel import run_matches  # Numba, imported when a run needs it

    tables = query if isinstance(query, MatchTables) else compile_query(query)
    out = run_matches(tables, sat, np.asarray(times))
    emitted, offsets, events, positions = out[4:8] if timeouts else out[:4]
    names = tables.position_names
    return [Match(int(emitted[j]), tuple(int(e) for e in events[offsets[j]:offsets[j + 1]]),
                  tuple(names[p] for p in positions[offsets[j]:offsets[j + 1]]),
                  int(out[8][j]) if timeouts else None)
            for j in range(len(emitted))]
