"""Reversed alternating automata against acyclic DTs (seed 003, §5.4.2).

Pipeline position: an analysis beside the DT. Takes an acyclic DT over the
unit signature (no initial states, one final state) and returns its r-AFA,
or the other way (:mod:`~dt.afa.translate`); :mod:`~dt.afa.families` builds
the family that shows the exponential gap to DFAs (the DFA of a DT is
:func:`qre.language.automata.dt_language`, minimized).

Costs: both translations are linear (formulas are shared DAGs); an r-AFA
runs in O(size of δ) per tag.
"""

from .families import nth_from_end, nth_from_end_dt
from .model import FALSE, RAFA, TRUE, Both, Either, Formula, Lit, Neg, formula_size
from .translate import dt_from_rafa, rafa_from_dt

__all__ = ["FALSE", "RAFA", "TRUE", "Both", "Either", "Formula", "Lit", "Neg", "dt_from_rafa",
           "formula_size", "nth_from_end", "nth_from_end_dt", "rafa_from_dt"]
