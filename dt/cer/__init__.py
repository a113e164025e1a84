"""Complex event recognition with match output (issue 26).

Pipeline position: the language's patterns → :class:`~dt.cer.pattern.MatchQuery` →
:class:`~dt.cer.automaton.Automaton` → the match kernel (:mod:`codegen.cer`).
:mod:`dt.cer.oracle` enumerates matches by brute force: the meaning, and the tests'
oracle.
"""
