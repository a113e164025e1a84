"""The compiler's cost guards (issue 19, points 15 and 16): lean and shared compilation.

* ``lean``: the compiler optimizes every intermediate DT above a size
  (:data:`qre.language.compiler.LEAN_STATES`) and breaks the copy cycles of a
  support's input. Checked with ``lean=0`` — every construction optimized — against
  the denotational oracle (qre.language.semantics) after every prefix, and against
  the DT compiled exactly as §5.2 prints it (``lean=None``) under the reference
  evaluator with random initial vectors and restarts (Definition 5.4): the same
  outputs, status and value bit for bit, for A_α and I_α, and the same facts.
* sharing: a let-bound query is one object used several times; the identical
  operands of a combine, comparison or connective compile to one sub-DT. Random
  queries with repeated operands against the oracle; 20 chained
  ``combine(x, x, +)`` compile in a moment; chains that double in other ways are
  refused before compiling, naming the let (qre.language.typing).
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from query_strategies import (
    base_queries,
    defined_top_queries,
    ops,
    temporal_queries,
    top_queries,
)
from strategies import alphabets, data_values, initial_vectors
from test_compile import cases, sized_words
from test_optimize import trace
from util import assert_same_outputs

from dt.reference import evaluate, outputs
from dt.terms import Const
from qre import qre
from qre.language import ast
from qre.language.compiler import LEAN_STATES, compile_query
from qre.language.errors import QreTypeError
from qre.language.parser import parse
from qre.language.semantics import prefix_meanings, run_program
from qre.language.typing import MAX_EXPANDED_SIZE, check


@st.composite
def shared_queries(draw, alphabet: tuple[str, ...]) -> ast.Query:
    """Queries whose parallel constructs repeat one operand object (a let used twice)."""
    kind = draw(st.sampled_from(["combine", "compare", "bool", "nested"]))
    if kind == "combine":
        q = draw(base_queries(alphabet, depth=3))
        k = draw(st.integers(2, 3))
        return ast.Combine((q,) * k, draw(ops(k)))
    if kind == "compare":
        total = draw(defined_top_queries(alphabet, 1))
        return ast.Compare(draw(st.sampled_from(list(ast.COMPARISONS))), total, total)
    if kind == "bool":
        p = draw(temporal_queries(alphabet, depth=1))
        return ast.BoolOp(draw(st.sampled_from(ast.CONNECTIVES)), p, p)
    # a let chain: x_{k+1} = combine(x_k, x_k, op), under split and or (separate copies)
    x = draw(base_queries(alphabet, depth=2))
    for _ in range(draw(st.integers(1, 3))):
        x = ast.Combine((x, x), draw(ops(2)))
    return ast.Split(x, ast.Or(x, x), draw(ops(2)))


@st.composite
def cyclic_fills(draw, alphabet: tuple[str, ...]) -> ast.Query:
    """fill / fill_with over iterations of queries that match the empty word, right of a
    split or nested: their identity DTs have cycles of copies that do not pass through
    an initial state (what the compiler breaks before it builds a support)."""
    q = draw(base_queries(alphabet, depth=1))
    for _ in range(draw(st.integers(1, 2))):
        q = ast.Iter(ast.Or(q, ast.Eps(Const(draw(data_values)))), draw(data_values),
                     draw(ops(2)))
        q = ast.Split(draw(base_queries(alphabet, depth=1)), q, draw(ops(2)))
    if draw(st.booleans()):
        return ast.Fill(q)
    return ast.FillWith(q, draw(base_queries(alphabet, depth=1)))


def assert_oracle(alphabet, query, word, *, lean):
    typed = check(query, alphabet)
    compiled = compile_query(typed.query, alphabet, lean=lean)
    got = evaluate(compiled.value, [0.0], word)
    assert_same_outputs(got, [(v,) for v in prefix_meanings(query, word)])
    return compiled


# --------------------------------------------------------------------------- lean


@settings(max_examples=80)
@given(cases(lambda a: st.one_of(base_queries(a, depth=4), top_queries(a, depth=3),
                                 temporal_queries(a, depth=2), cyclic_fills(a))))
def test_lean_compile_matches_the_oracle(case):
    """Every intermediate DT optimized (lean=0): the oracle's output after every prefix."""
    assert_oracle(*case, lean=0)


@st.composite
def compiled_pairs(draw):
    """A query compiled as printed and with every construction optimized, plus a run."""
    alphabet = draw(alphabets(2, 3))
    query = draw(st.one_of(base_queries(alphabet, depth=3), shared_queries(alphabet)))
    typed = check(query, alphabet)
    plain = compile_query(typed.query, alphabet, lean=None)
    lean = compile_query(typed.query, alphabet, lean=0)
    x = draw(initial_vectors(plain.value))
    word = draw(sized_words(alphabet))
    positions = draw(st.lists(st.integers(0, max(len(word) - 1, 0)), max_size=3, unique=True))
    restarts = {k: draw(initial_vectors(plain.value)) for k in positions if k < len(word)}
    return plain, lean, x, word, restarts


@settings(max_examples=80)
@given(compiled_pairs())
def test_lean_compile_is_exact_under_restarts(case):
    """A_α and I_α built lean give the outputs of the plain construction for every initial
    vector (⊥ and ⊤ included) and restart, so they compose exactly; the facts are kept."""
    plain, lean, x, word, restarts = case
    for a, b in ((plain.value, lean.value), (plain.identity, lean.identity)):
        if a is None:
            assert b is None
            continue
        want = [outputs(a, c) for c in trace(a, x, word, restarts)]
        assert_same_outputs([outputs(b, c) for c in trace(b, x, word, restarts)], want)
        assert b.facts == a.facts
        assert (len(b.initial), len(b.final)) == (len(a.initial), len(a.final))
        assert len(b.states) <= len(a.states)


def nested_fill(levels: int) -> str:
    """fill over iterations nested ``levels`` deep, with a combine every third level:
    the identity DT has copy cycles, which the support construction used to unroll."""
    q = "atom(a, cur)"
    for k in range(levels):
        q = (f"iter(combine({q}, {q.replace('cur', 'cur+1', 1)}, +), {k}, max)" if k % 3 == 2
             else f"iter({q}, {k}, +)")
    return f"alphabet a, b; fill({q})"


def test_nested_fill_compiles_lean():
    """Issue 19.16: a 327-character fill built 25,003 states (3 s; 113,130 at 663
    characters, 57 s) before the optimizer cut it to 2. Lean, the support reads an
    acyclic I and nothing large is ever built."""
    text = nested_fill(8)
    m = qre(text)
    assert m.stats.unoptimized_states <= 50, m.stats.unoptimized_states
    assert len(qre(text, optimize=False).dt.states) > 20_000  # as §5.2 prints it
    word = [("a", 1.0), ("b", 2.0), ("a", 3.0)]
    program = parse(text)
    want = run_program(program, word)
    got = m.run([t for t, _ in word], [v for _, v in word], engine="reference")
    assert_same_outputs(got.xvalues(), [(v,) for v in want[1:]])


# --------------------------------------------------------------------------- sharing


@settings(max_examples=80)
@given(cases(shared_queries))
def test_shared_operands_match_the_oracle(case):
    alphabet, query, word = case
    assert_oracle(alphabet, query, word, lean=LEAN_STATES)
    assert_oracle(alphabet, query, word, lean=None)


def chain(n: int, body: str) -> str:
    lines = ["alphabet a, b;", "let x0 = iter(atom(a, cur), 0, +);"]
    lines += [f"let x{k} = {body.format(p=f'x{k - 1}')};" for k in range(1, n + 1)]
    return "\n".join([*lines, f"x{n}"])


def test_twenty_chained_combines_compile_at_once():
    """Issue 19.15: 20 lines of ``let x = combine(x, x, +)`` used to expand to 2^20 copies."""
    start = time.perf_counter()
    m = qre(chain(20, "combine({p}, {p}, +)"))
    assert time.perf_counter() - start < 10
    assert m.stats.unoptimized_states < 100
    out = m.run(["a", "a", "b"], [1.0, 2.0, 5.0])
    assert out.status.tolist() == [1, 1, 0]
    assert out.value[:2].tolist() == [2.0 ** 20, 3 * 2.0 ** 20]


def test_a_type_error_does_not_print_a_doubling_chain():
    """A message quotes a short query only: the text of x40 has 2^40 leaves. It quotes
    the query as written (names unexpanded), else a placeholder."""
    text = chain(40, "combine({p}, {p}, +)").rsplit("\n", 1)[0]
    start = time.perf_counter()
    with pytest.raises(QreTypeError, match=r"fill_with\(split\(x40, atom\(b, cur\), \+\), "
                                           r"const\(0\)\)") as info:
        qre(f"{text}\n!(split(x40, atom(b, cur), +) < const(1))")
    assert time.perf_counter() - start < 5
    assert len(str(info.value)) < 500
    with pytest.raises(QreTypeError, match=r"fill_with\(<this query>, const\(0\)\)"):
        check(parse(f"{text}\n!(split(x40, atom(b, cur), +) < const(1))"))  # no source


def test_a_small_chain_matches_the_oracle():
    text = chain(4, "combine({p}, {p}, (u, v) -> u - 2 * v)")
    word = [("a", 1.5), ("a", -2.0), ("b", 0.0), ("a", 4.0)]
    want = run_program(parse(text), word)
    got = qre(text).run([t for t, _ in word], [v for _, v in word], engine="reference")
    assert_same_outputs(got.xvalues(), [(v,) for v in want[1:]])


@pytest.mark.parametrize("body", ["split({p}, {p}, +)", "or({p}, split({p}, atom(b, 1), +))"])
def test_doubling_chains_are_refused_before_compiling(body):
    """A chain whose uses are separate sub-DTs: refused in a moment, naming the first let
    that passes the bound, with its size and the name it repeats."""
    start = time.perf_counter()
    with pytest.raises(QreTypeError) as info:
        qre(chain(40, body))
    assert time.perf_counter() - start < 5
    err = info.value
    lines = chain(40, body).splitlines()
    assert lines[err.line - 1].startswith("let x")
    name = lines[err.line - 1].split()[1]
    k = int(name[1:])
    assert f"let {name} expands to a query of size" in err.message
    assert f"x{k - 1} is used 2 times" in err.message
    assert f"{MAX_EXPANDED_SIZE:,}" in err.message
    qre(chain(k - 1, body))  # the one before compiles


def test_a_long_query_without_lets_is_never_refused():
    """The bound is on what lets multiply: a query may be as large as its text."""
    leaves = [f"atom(a, {k})" for k in range(4096)]
    while len(leaves) > 1:  # a balanced tree of or: 12 levels, size > MAX_EXPANDED_SIZE
        leaves = [f"or({x}, {y})" for x, y in zip(leaves[::2], leaves[1::2], strict=True)]
    text = "alphabet a; " + leaves[0]
    assert ast.query_size(check(parse(text), None, text).query) > MAX_EXPANDED_SIZE
