"""Complex event recognition at run time (issue 26).

Pipeline position: compiled match queries and the user's CER functions → rows.
:mod:`.matches` runs ``match(...)`` queries (:class:`~.matches.Matcher`: one row per
match, through the match kernel of :mod:`codegen.cer`); :mod:`.session` runs one over
input in parts (:class:`~.session.MatchSession`, the kernel's state carried between
parts); :mod:`.operators` are seed 004's
S&P, T-CER and R-CER on pandas frames, with the user's ``f_p``, ``f_c`` (or a Matcher)
and ``f_m``/``f_t``. Costs: the kernel's per event plus the matches written out; a
Python call per tuple for the user's functions.
"""

from .matches import Matcher
from .operators import rule_based_cer, sort_and_preprocess, time_based_cer
from .session import MatchSession

__all__ = ["MatchSession", "Matcher", "rule_based_cer", "sort_and_preprocess",
           "time_based_cer"]
