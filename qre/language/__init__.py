"""The QRE-Past language: query text → AST → typed AST → data transducer (seed 003, §5.3).

Pipeline position: the front of the pipeline. :mod:`~qre.language.parser` reads text
(``grammar.lark``, whose LALR tables and error messages are :mod:`~qre.language.lalr`'s)
into the AST of :mod:`~qre.language.ast` (also built in Python by
:mod:`~qre.language.combinators`, printed back by :mod:`~qre.language.printer`), with
the sugar of :mod:`~qre.language.sugar`; :mod:`~qre.language.typing` resolves names,
fixes the alphabet and checks rates (automata of :mod:`~qre.language.automata`);
:mod:`~qre.language.compiler` builds the DT pair (A_α, I_α) with package ``dt``'s
constructions; timed queries add a clock (:mod:`~qre.language.clock`), CER patterns
(:mod:`~qre.language.patterns`), derived tags (:mod:`~qre.language.derive`) and past
operators bounded by durations (read the event time as ``within`` does).
:mod:`~qre.language.semantics` is the independent denotational oracle. Errors are
:mod:`~qre.language.errors`' located ``QreSyntaxError`` / ``QreTypeError``.

Takes query text (or an AST); returns a DT with a clock and derived tags, which
:func:`qre.qre` wraps into a :class:`qre.Monitor` (package :mod:`qre.runtime`).
Cost: parsing and typing linear in the query except the rate checks (automata,
exponential in the worst case, small in practice); compiling quadratic (Theorem 5.7).
"""
