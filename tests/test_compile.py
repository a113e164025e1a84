"""The compiler (§5.3.2) against the denotational oracle (qre.language.semantics), every prefix.

Random well-typed queries (tests/query_strategies.py) over 2–3 tags and random
words of up to 6 events: the compiled DT, run by the reference evaluator with a
defined initial value, gives the oracle's status and value after every prefix,
the empty one included. I_α has the identity semantics of §5.3.2: its status
is A_α's, its value the input. The type checker accepts every generated query.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from query_strategies import base_queries, temporal_queries, top_queries
from strategies import alphabets, data_values
from util import assert_same_outputs

from dt.reference import evaluate
from dt.values import BOT, TOP, is_defined, status_of
from qre import qre
from qre.language.ast import query_size
from qre.language.compiler import compile_query
from qre.language.printer import to_text
from qre.language.semantics import prefix_meanings
from qre.language.typing import Kind, check


def _agrees_with_oracle(alphabet, query, word):
    typed = check(query, alphabet)
    compiled = compile_query(typed.query, alphabet)
    got = evaluate(compiled.value, [0.0], word)
    want = [(v,) for v in prefix_meanings(query, word)]
    assert_same_outputs(got, want)
    return typed, compiled


def sized_words(alphabet, max_len=6):
    """Words whose length is drawn first: plain lists average under two events."""
    return st.integers(0, max_len).flatmap(
        lambda n: st.lists(st.tuples(st.sampled_from(alphabet), data_values),
                           min_size=n, max_size=n))


@st.composite
def cases(draw, queries):
    alphabet = draw(alphabets(2, 3))
    return alphabet, draw(queries(alphabet)), draw(sized_words(alphabet))


def _depth(q) -> int:
    """Nesting depth of a query (a leaf is 1)."""
    kids = [getattr(q, f) for f in ("left", "right", "body", "default") if hasattr(q, f)]
    kids += list(getattr(q, "args", ()))
    return 1 + max((_depth(k) for k in kids), default=0)


@settings(max_examples=150)
@given(cases(lambda a: base_queries(a, depth=5, min_depth=4)))
def test_base_queries_match_the_oracle(case):
    alphabet, query, word = case
    assert _depth(query) >= 5  # min_depth 4 composite levels above a leaf
    typed, compiled = _agrees_with_oracle(alphabet, query, word)
    assert typed.kind is Kind.BASE
    # Theorem 5.7: I_α linear, A_α at most quadratic in the query (constants measured by
    # benchmarks/query_sizes.py and random queries: 10.7 and 3.4 at most).
    n = query_size(query)
    assert compiled.identity.size <= 12 * n
    assert compiled.value.size <= 4 * n * n
    # I_α (§5.3.2): equivalent to A_α, and returns its input where A_α is defined.
    for x in (0.0, 7.5):
        values = [y for (y,) in evaluate(compiled.value, [x], word)]
        idents = [y for (y,) in evaluate(compiled.identity, [x], word)]
        for v, i in zip(values, idents, strict=True):
            assert status_of(v) == status_of(i)
            assert not is_defined(i) or i == x


@settings(max_examples=60)
@given(cases(lambda a: st.one_of(base_queries(a, depth=3), temporal_queries(a, depth=2))))
def test_the_text_path_gives_the_same_dt(case):
    """to_text then qre(text): the same DT as compiling the AST built in code."""
    alphabet, query, _ = case
    text = to_text(query)
    plain = compile_query(query, alphabet, lean=None).value
    assert qre(text, alphabet=alphabet, optimize=False).dt == plain


@settings(max_examples=60)
@given(cases(lambda a: top_queries(a, depth=4)))
def test_top_level_queries_match_the_oracle(case):
    _agrees_with_oracle(*case)


@settings(max_examples=60)
@given(cases(lambda a: temporal_queries(a, depth=4)))
def test_temporal_queries_match_the_oracle(case):
    alphabet, query, word = case
    _, compiled = _agrees_with_oracle(alphabet, query, word)
    for (y,) in evaluate(compiled.value, [0.0], word):
        assert y in (0.0, 1.0), "temporal queries are defined booleans on every prefix"


def test_undefined_input_gives_undefined_output():
    """A_α on the all-⊥ initial vector stays ⊥ (restartability, k = 0 threads)."""
    from dt.terms import Cur
    from qre.language import ast

    q = ast.Iter(ast.Or(ast.Atom("a", Cur()), ast.Atom("b", Cur())), 0.0, ast.BuiltinOp("+"))
    d = compile_query(q, ("a", "b")).value
    assert all(y is BOT for (y,) in evaluate(d, [BOT], [("a", 1.0), ("b", 2.0)]))
    assert all(y is TOP for (y,) in evaluate(d, [TOP], [("a", 1.0), ("b", 2.0)]))
