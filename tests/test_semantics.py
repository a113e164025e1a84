"""Tests of the QRE-Past denotational interpreter (:mod:`qre.language.semantics`), seed 003 §5.3.2.

Three kinds of check, none of them derived from the code's own recurrences:

* golden examples per construct, computed by hand (including the paper's fill
  example ⊥, ⊤, 3, ⊤, 4, 5, ⊥);
* the past-time operators against their textbook finite-trace definitions
  (∀/∃ over positions), on arbitrary truth traces realised through the data;
* multiset laws (``or(q, q)`` is ⊤ wherever q matches, ``eps`` is a unit of
  split, one-piece iteration) and brute-force enumerations of every split and
  every factorization, on random queries and words.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import data_values, terms
from util import same, same_vector

from dt.errors import EvaluationError
from dt.terms import Const, Cur, Var, evaluate_term, parse_term
from dt.values import BOT, TOP, XValue, is_defined, lift, union
from qre.language.ast import Atom as AtomNode
from qre.language.ast import (
    BoolOp,
    BuiltinOp,
    Combine,
    Compare,
    Eps,
    Fill,
    FillWith,
    Hist,
    Iter,
    Lambda,
    Let,
    Name,
    Not,
    Once,
    Op,
    Or,
    PrefixSum,
    Prev,
    Program,
    Query,
    RunningFold,
    Since,
    Split,
)
from qre.language.errors import QreTypeError
from qre.language.semantics import meaning, prefix_meanings, resolve, run_program

NAN = math.nan
PLUS, TIMES, MAX, FST, SND = (BuiltinOp(s) for s in ("+", "*", "max", "fst", "snd"))


# --------------------------------------------------------------------------- helpers


def atom(tag: str, term: str = "cur") -> AtomNode:
    return AtomNode(tag, parse_term(term))


def eps(c: float) -> Eps:
    return Eps(Const(float(c)))


def lam(params: str, body: str) -> Lambda:
    return Lambda(tuple(params.split(",")), parse_term(body))


def W(text: str) -> list[tuple[str, float]]:
    """``W("a1 b2.5")`` is the word [("a", 1.0), ("b", 2.5)]."""
    return [(e[0], float(e[1:])) for e in text.split()]


def check(got: Sequence[XValue], want: Sequence[XValue]) -> None:
    assert same_vector(list(got), list(want)), f"got {list(got)}, expected {list(want)}"


ANY = Or(atom("a", "0"), atom("b", "0"))
SKIP = Iter(ANY, 0.0, FST)
"""Matches every word over {a, b} with the unique parse into single events; value 0."""


def const(c: float) -> Iter:
    """The query with value c on every word over {a, b} (the fold fst keeps init)."""
    return Iter(ANY, float(c), FST)


def last(field: str | None = None) -> Split:
    """The value (or a field) of the last event over {a, b}; ⊥ on ε."""
    return Split(SKIP, Or(AtomNode("a", Cur(field)), AtomNode("b", Cur(field))), SND)


# --------------------------------------------------------------------------- golden: atoms


def test_atom_matches_one_event_of_its_tag():
    q = atom("a", "cur * 2")
    assert meaning(q, W("a3")) == 6.0
    for word in [W(""), W("b3"), W("a3 a3"), W("b1 a3")]:
        assert meaning(q, word) is BOT


def test_atom_reads_record_fields():
    q = AtomNode("a", parse_term("cur.x - cur.y"))
    assert meaning(q, [("a", {"x": 5.0, "y": 2.0})]) == 3.0
    with pytest.raises(EvaluationError):
        meaning(q, [("a", {"x": 5.0})])


def test_eps_matches_only_the_empty_word():
    assert meaning(eps(4), []) == 4.0
    assert meaning(Eps(parse_term("1 / 0")), []) == math.inf
    assert meaning(eps(4), W("a1")) is BOT


# --------------------------------------------------------------------------- golden: or


def test_or_takes_the_one_that_matches():
    q = Or(atom("a", "cur + 1"), atom("b", "cur * 10"))
    check(prefix_meanings(q, W("a1")), [BOT, 2.0])
    check(prefix_meanings(q, W("b2")), [BOT, 20.0])
    assert meaning(q, W("c2")) is BOT


def test_or_is_top_when_both_match_even_with_equal_values():
    assert meaning(Or(atom("a"), atom("a")), W("a1")) is TOP
    assert meaning(Or(eps(0), eps(0)), []) is TOP


def test_or_propagates_top_from_one_side():
    top = Or(atom("a"), atom("a"))
    assert meaning(Or(top, atom("b")), W("a1")) is TOP
    assert meaning(Or(top, atom("b")), W("b7")) == 7.0


# --------------------------------------------------------------------------- golden: split


def test_split_unique():
    q = Split(atom("a"), atom("b"), lam("x,y", "x - y"))
    assert meaning(q, W("a5 b2")) == 3.0
    assert meaning(q, W("b2 a5")) is BOT
    assert meaning(q, W("a5")) is BOT


def test_split_ambiguous_is_top():
    star = Iter(atom("a"), 0.0, PLUS)
    q = Split(star, star, PLUS)
    assert meaning(q, []) == 0.0  # ε = ε·ε only
    assert meaning(q, W("a1")) is TOP  # ε·a and a·ε both give 1: still ⊤
    assert meaning(q, W("b1")) is BOT


def test_split_with_eps_parts():
    assert meaning(Split(eps(2), atom("a"), TIMES), W("a3")) == 6.0
    assert meaning(Split(atom("a"), eps(2), lam("x,y", "x - y")), W("a3")) == 1.0
    assert meaning(Split(eps(2), eps(3), PLUS), []) == 5.0


def test_split_top_part_is_lifted():
    top = Or(atom("a"), atom("a"))
    assert meaning(Split(top, atom("b"), FST), W("a1 b2")) is TOP
    assert meaning(Split(top, atom("b"), FST), W("a1 a2")) is BOT  # ⊤ then ⊥ is ⊥


# --------------------------------------------------------------------------- golden: iter


def test_iter_sums_the_pieces():
    q = Iter(atom("a"), 0.0, PLUS)
    check(prefix_meanings(q, W("a1 a2 a3")), [0.0, 1.0, 3.0, 6.0])
    assert meaning(q, W("a1 b2")) is BOT


def test_iter_on_the_empty_word_is_init():
    assert meaning(Iter(atom("a"), 7.0, PLUS), []) == 7.0
    assert meaning(Iter(Split(atom("a"), atom("b"), PLUS), -1.0, MAX), []) == -1.0


def test_iter_folds_left_to_right():
    # op(op(op(init, 1), 2), 3) with op(x, y) = 2x + y, init 0: ((0·2+1)·2+2)·2+3 = 11.
    q = Iter(atom("a"), 0.0, lam("x,y", "2 * x + y"))
    assert meaning(q, W("a1 a2 a3")) == 11.0


def test_iter_with_multi_event_pieces():
    pair = Split(atom("a"), atom("b"), lam("x,y", "x * y"))
    q = Iter(pair, 0.0, PLUS)
    assert meaning(q, W("a2 b3 a4 b5")) == 26.0
    assert meaning(q, W("a2 b3 a4")) is BOT


def test_iter_ambiguous_factorization_is_top():
    one_or_two = Or(atom("a"), Split(atom("a"), atom("a"), PLUS))
    q = Iter(one_or_two, 0.0, PLUS)
    assert meaning(q, W("a1")) == 1.0
    assert meaning(q, W("a1 a2")) is TOP  # a|a and aa, both 3


def test_iter_body_matching_eps_gives_top_where_defined():
    q = Iter(Or(atom("a"), eps(0)), 0.0, PLUS)
    assert meaning(q, []) is TOP  # init, op(init, 0), op(op(init, 0), 0), …
    assert meaning(q, W("a1 a2")) is TOP
    assert meaning(q, W("b1")) is BOT  # no parse at all: stays ⊥
    assert meaning(q, W("a1 b1")) is BOT


def test_iter_eps_rule_also_for_a_conflicting_empty_value():
    q = Iter(Or(atom("a"), Or(eps(0), eps(0))), 0.0, PLUS)
    assert meaning(q, W("a1")) is TOP
    assert meaning(q, W("b1")) is BOT


def test_iter_of_iter():
    inner = Iter(atom("a"), 0.0, PLUS)  # matches ε: the outer iteration is ⊤ where defined
    assert meaning(Iter(inner, 0.0, PLUS), []) is TOP
    assert meaning(Iter(inner, 0.0, PLUS), W("a1")) is TOP
    block = Split(atom("b"), inner, PLUS)  # b a*: unique blocks
    q = Iter(block, 0.0, MAX)
    assert meaning(q, W("b1 a2 a3 b4 a1")) == 6.0
    assert meaning(q, W("a1 b1")) is BOT


# --------------------------------------------------------------------------- golden: combine


def test_combine_applies_op_to_every_argument():
    total = Iter(atom("a"), 0.0, PLUS)
    count = Iter(atom("a", "1"), 0.0, PLUS)
    avg = Combine((total, count), lam("s,n", "s / n"))
    assert meaning(avg, W("a1 a2 a6")) == 3.0
    assert math.isnan(meaning(avg, []))  # 0 / 0: a defined NaN
    three = Combine((total, count, const(10)), lam("s,n,c", "s + n + c"))
    assert meaning(three, W("a1 a2")) == 15.0


def test_combine_is_lifted():
    top = Or(atom("a"), atom("a"))
    assert meaning(Combine((atom("a"), top), PLUS), W("a1")) is TOP
    assert meaning(Combine((atom("a"), atom("b")), PLUS), W("a1")) is BOT
    assert meaning(Combine((top, atom("b")), PLUS), W("a1")) is BOT


# --------------------------------------------------------------------------- golden: prefix_sum


def test_prefix_sum_running_sum():
    q = PrefixSum(Or(eps(0), last()), 0.0, PLUS)
    check(prefix_meanings(q, W("a1 b2 a3")), [0.0, 1.0, 3.0, 6.0])


def test_prefix_sum_starts_with_op_of_init_and_the_empty_value():
    q = PrefixSum(Or(eps(5), last()), 1.0, lam("s,x", "s * 10 + x"))
    # s(0) = 1·10 + 5 = 15, s(1) = 150 + 2 = 152, s(2) = 1520 + 3 = 1523.
    check(prefix_meanings(q, W("a2 b3")), [15.0, 152.0, 1523.0])


def test_prefix_sum_count_of_a():
    is_a = Or(eps(0), Split(SKIP, Or(atom("a", "1"), atom("b", "0")), SND))
    q = PrefixSum(is_a, 0.0, PLUS)
    check(prefix_meanings(q, W("a0 b0 a0 a0 b0")), [0.0, 1.0, 1.0, 2.0, 3.0, 3.0])


def test_prefix_sum_is_lifted_for_ever():
    q = PrefixSum(eps(5), 1.0, PLUS)
    check(prefix_meanings(q, W("a1 a1")), [6.0, BOT, BOT])
    top_at_one = Or(Or(eps(0), last()), Split(atom("b"), eps(0), FST))
    check(prefix_meanings(PrefixSum(top_at_one, 0.0, PLUS), W("b1 a2")), [0.0, TOP, TOP])


# --------------------------------------------------------------------------- golden: fold


def test_running_fold_updates_every_register_at_once():
    """fold([1, 2], (a, b) -> [b, a + cur], (a, b) -> a * 10 + b): each update reads the
    registers before the event (a swap, not a sequence); defined on ε, every word."""
    q = RunningFold(("a", "b"), (1.0, 2.0), (parse_term("b"), parse_term("a + cur")),
                    parse_term("a * 10 + b"))
    # (1, 2) → (2, 1 + 5) → (6, 2 + 7) → (9, 6 + 0)
    check(prefix_meanings(q, W("a5 b7 a0")), [12.0, 26.0, 69.0, 96.0])
    assert meaning(Split(q, atom("a"), SND), W("b1 a3")) == 3.0  # a base query, Σ*


def test_population_variance_by_hand():
    """var(cur) of 1, 2, 4: mean 7/3, variance (16 + 1 + 25) / 27 = 14/9; std its root."""
    from qre.language.sugar import std, var

    check(prefix_meanings(var(Cur()), W("a1 b2 a4"))[:3], [NAN, 0.0, 0.25])
    assert meaning(var(Cur()), W("a1 b2 a4")) == pytest.approx(14 / 9, rel=1e-15)
    assert meaning(std(Cur()), W("a1 b2 a4")) == pytest.approx(math.sqrt(14 / 9), rel=1e-15)


# --------------------------------------------------------------------------- golden: fill


# The paper's example (§5.3.2, "Fill operations"): outputs ⊥, ⊤, 3, ⊤, 4, 5, ⊥ after the
# prefixes of the word c d3 c d4 d5 b: the value of the last event if its tag is d, ⊤ if
# it is c (two atoms match), nothing for b or before any event.
_ANY_BCD = Or(atom("b", "0"), Or(atom("c", "0"), atom("d", "0")))
_PAPER_Q = Split(Iter(_ANY_BCD, 0.0, FST), Or(atom("d"), Or(atom("c", "0"), atom("c", "0"))),
                 SND)
_PAPER_WORD = W("c0 d3 c0 d4 d5 b0")


def test_paper_sequence_query():
    check(prefix_meanings(_PAPER_Q, _PAPER_WORD), [BOT, TOP, 3.0, TOP, 4.0, 5.0, BOT])


def test_fill_on_the_paper_sequence():
    check(prefix_meanings(Fill(_PAPER_Q), _PAPER_WORD), [BOT, BOT, 3.0, 3.0, 4.0, 5.0, 5.0])


def test_fill_with_zero_on_the_paper_sequence():
    zero = Iter(_ANY_BCD, 0.0, FST)
    check(prefix_meanings(FillWith(_PAPER_Q, zero), _PAPER_WORD),
          [0.0, 0.0, 3.0, 0.0, 4.0, 5.0, 0.0])


def test_fill_with_passes_the_default_through_unchanged():
    top = Or(eps(1), eps(1))
    assert meaning(FillWith(atom("a"), top), []) is TOP
    assert meaning(FillWith(atom("a"), atom("b")), W("c1")) is BOT
    assert math.isnan(meaning(FillWith(atom("a", "0/0"), eps(1)), W("a1")))  # NaN is defined


# --------------------------------------------------------------------------- golden: comparisons


@pytest.mark.parametrize(("op", "a", "b", "want"), [
    ("<", 1, 2, 1.0), ("<", 2, 2, 0.0), ("<=", 2, 2, 1.0), ("<=", 3, 2, 0.0),
    (">", 3, 2, 1.0), (">", 2, 3, 0.0), (">=", 2, 2, 1.0), (">=", 1, 2, 0.0),
    ("==", 2, 2, 1.0), ("==", 2, 3, 0.0), ("==", NAN, NAN, 0.0), ("<", NAN, 1, 0.0),
    (">=", NAN, NAN, 0.0), ("==", 0.0, -0.0, 1.0),
])
def test_comparisons(op, a, b, want):
    q = Compare(op, const(a), const(b))
    check(prefix_meanings(q, W("a1 b2")), [want] * 3)


def test_comparison_of_last_values_is_lifted():
    q = Compare(">", last(), const(1))
    check(prefix_meanings(q, W("a3 b0")), [BOT, 1.0, 0.0])
    assert meaning(Compare("<", Or(last(), last()), const(1)), W("a3")) is TOP


# --------------------------------------------------------------------------- golden: booleans

_TRUTH = {0.0: False, 1.0: True, -2.0: True, NAN: True}  # d ≠ 0 is true, NaN included
_TABLE = {  # (a, b) truth → result, the classical tables written out
    "&&": {(False, False): 0, (False, True): 0, (True, False): 0, (True, True): 1},
    "||": {(False, False): 0, (False, True): 1, (True, False): 1, (True, True): 1},
    "->": {(False, False): 1, (False, True): 1, (True, False): 0, (True, True): 1},
    "<->": {(False, False): 1, (False, True): 0, (True, False): 0, (True, True): 1},
}


@pytest.mark.parametrize("op", list(_TABLE))
def test_connectives_with_nan_truthiness(op):
    for a, b in itertools.product(_TRUTH, repeat=2):
        q = BoolOp(op, const(a), const(b))
        want = float(_TABLE[op][_TRUTH[a], _TRUTH[b]])
        check(prefix_meanings(q, W("a1")), [want, want])


def test_not():
    for a, truth in _TRUTH.items():
        assert meaning(Not(const(a)), []) == (0.0 if truth else 1.0)
    assert meaning(Not(last()), []) is BOT
    assert meaning(BoolOp("||", const(1), last()), []) is BOT  # lifted, no short circuit


# --------------------------------------------------------------------------- golden: temporal


def test_prev_passes_the_previous_value():
    q = Prev(Compare(">", fill_signal(None, 0.0), const(1)))
    check(prefix_meanings(q, W("a5 b0 a2")), [0.0, 0.0, 1.0, 0.0])


def test_temporal_operators_on_undefined_operands_are_lifted():
    check(prefix_meanings(Once(eps(1)), W("a1 a1")), [1.0, BOT, BOT])
    check(prefix_meanings(Hist(atom("a", "1")), W("a1")), [BOT, BOT])
    check(prefix_meanings(Prev(atom("a", "1")), W("a1 a1")), [0.0, BOT, 1.0])
    check(prefix_meanings(Since(const(1), Or(eps(1), eps(1))), W("a1")), [TOP, BOT])


def test_since_strong_and_weak_golden():
    # φ1 = (last > 0), φ2 = (last > 5); both false on ε.
    p1 = Compare(">", fill_signal(None, 0.0), const(0))
    p2 = Compare(">", fill_signal(None, 0.0), const(5))
    word = W("a1 a9 a1 a0 a1")
    # φ1: 0 1 1 1 0 1 ; φ2: 0 0 1 0 0 0
    check(prefix_meanings(Since(p1, p2), word), [0.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    check(prefix_meanings(Since(p1, p2, strong=False), word), [0.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    always = Compare(">=", fill_signal(None, 0.0), const(0))  # true on every prefix
    check(prefix_meanings(Since(always, p2, strong=False), word), [1.0] * 6)
    check(prefix_meanings(Since(always, p2), word), [0.0, 0.0, 1.0, 1.0, 1.0, 1.0])


# --------------------------------------------------------------------------- temporal vs textbook


def fill_signal(field: str | None, at_eps: float) -> FillWith:
    """The value (field) of the last event; ``at_eps`` on the empty word. Total over {a, b}."""
    return FillWith(last(field), eps(at_eps))


def tb_prev(t: list[bool]) -> list[bool]:
    return [k > 0 and t[k - 1] for k in range(len(t))]


def tb_hist(t: list[bool]) -> list[bool]:
    return [all(t[j] for j in range(k + 1)) for k in range(len(t))]


def tb_once(t: list[bool]) -> list[bool]:
    return [any(t[j] for j in range(k + 1)) for k in range(len(t))]


def tb_since(t1: list[bool], t2: list[bool]) -> list[bool]:
    return [any(t2[j] and all(t1[i] for i in range(j + 1, k + 1)) for j in range(k + 1))
            for k in range(len(t1))]


def tb_wsince(t1: list[bool], t2: list[bool]) -> list[bool]:
    strong = tb_since(t1, t2)
    return [strong[k] or all(t1[i] for i in range(k + 1)) for k in range(len(t1))]


def pointwise(fn: Callable[[bool, bool], bool], t1: list[bool], t2: list[bool]) -> list[bool]:
    return [fn(a, b) for a, b in zip(t1, t2, strict=True)]


@st.composite
def two_traces(draw, values: Sequence[float]):
    """Two value traces of equal length n+1 (n ≤ 7): entry 0 is the value on ε."""
    n = draw(st.integers(0, 7))
    t1 = draw(st.lists(st.sampled_from(values), min_size=n + 1, max_size=n + 1))
    t2 = draw(st.lists(st.sampled_from(values), min_size=n + 1, max_size=n + 1))
    tags = draw(st.lists(st.sampled_from("ab"), min_size=n, max_size=n))
    word = [(tags[k], {"x": t1[k + 1], "y": t2[k + 1]}) for k in range(n)]
    return t1, t2, word


def as_bools(values: list[float], truth: Callable[[float], bool]) -> list[bool]:
    return [truth(v) for v in values]


def as_floats(bools: list[bool]) -> list[XValue]:
    return [1.0 if b else 0.0 for b in bools]


@given(two_traces([-1.0, 0.0, 1.0, 2.0]))
def test_temporal_operators_match_textbook_definitions(case):
    t1, t2, word = case
    # φ = (value of the last event, or the ε value, > 0): any 0/1 trace, ε included.
    p1 = Compare(">", fill_signal("x", t1[0]), const(0))
    p2 = Compare(">", fill_signal("y", t2[0]), const(0))
    b1, b2 = as_bools(t1, lambda v: v > 0), as_bools(t2, lambda v: v > 0)
    check(prefix_meanings(p1, word), as_floats(b1))  # the realisation itself
    check(prefix_meanings(p2, word), as_floats(b2))
    check(prefix_meanings(Prev(p1), word), as_floats(tb_prev(b1)))
    check(prefix_meanings(Hist(p1), word), as_floats(tb_hist(b1)))
    check(prefix_meanings(Once(p2), word), as_floats(tb_once(b2)))
    check(prefix_meanings(Since(p1, p2), word), as_floats(tb_since(b1, b2)))
    check(prefix_meanings(Since(p1, p2, strong=False), word), as_floats(tb_wsince(b1, b2)))
    check(prefix_meanings(Since(p2, p1, strong=False), word), as_floats(tb_wsince(b2, b1)))


@given(two_traces([-1.0, 0.0, 1.0, 2.0]))
def test_nested_temporal_formulas_match_textbook_definitions(case):
    t1, t2, word = case
    p1 = Compare(">", fill_signal("x", t1[0]), const(0))
    p2 = Compare(">", fill_signal("y", t2[0]), const(0))
    b1, b2 = as_bools(t1, lambda v: v > 0), as_bools(t2, lambda v: v > 0)
    # hist(prev(φ1) -> once(φ2))
    q = Hist(BoolOp("->", Prev(p1), Once(p2)))
    want = tb_hist(pointwise(lambda a, b: not a or b, tb_prev(b1), tb_once(b2)))
    check(prefix_meanings(q, word), as_floats(want))
    # !(!φ1 since φ2) <-> prev(prev(φ2))
    q = BoolOp("<->", Not(Since(Not(p1), p2)), Prev(Prev(p2)))
    inner = tb_since([not b for b in b1], b2)
    want = pointwise(lambda a, b: a == b, [not b for b in inner], tb_prev(tb_prev(b2)))
    check(prefix_meanings(q, word), as_floats(want))
    # once(φ1 && hist(φ2)) wsince (φ1 || φ2)
    q = Since(Once(BoolOp("&&", p1, Hist(p2))), BoolOp("||", p1, p2), strong=False)
    left = tb_once(pointwise(lambda a, b: a and b, b1, tb_hist(b2)))
    want = tb_wsince(left, pointwise(lambda a, b: a or b, b1, b2))
    check(prefix_meanings(q, word), as_floats(want))


@given(two_traces([0.0, 1.0, -1.0, 2.0, NAN]))
def test_temporal_operators_treat_nonzero_and_nan_as_true(case):
    t1, t2, word = case
    p1, p2 = fill_signal("x", t1[0]), fill_signal("y", t2[0])  # raw values, not 0/1
    b1, b2 = as_bools(t1, lambda v: v != 0), as_bools(t2, lambda v: v != 0)
    check(prefix_meanings(Hist(p1), word), as_floats(tb_hist(b1)))
    check(prefix_meanings(Once(p1), word), as_floats(tb_once(b1)))
    check(prefix_meanings(Since(p1, p2), word), as_floats(tb_since(b1, b2)))
    check(prefix_meanings(Since(p1, p2, strong=False), word), as_floats(tb_wsince(b1, b2)))
    check(prefix_meanings(Not(p1), word), as_floats([not b for b in b1]))
    # prev is φ(w[:-1]) itself (the brief's definition), 0 on ε
    check(prefix_meanings(Prev(p1), word), [0.0, *t1[:-1]])


# --------------------------------------------------------------------------- random queries

TAGS = ("a", "b")
_OP_FNS = {"+": lambda x, y: x + y, "*": lambda x, y: x * y, "min": min, "max": max,
           "fst": lambda x, y: x, "snd": lambda x, y: y}


def op_fn(op: Op) -> Callable[..., float]:
    """The operation as a Python function, written independently of the module under test."""
    if isinstance(op, BuiltinOp):
        return _OP_FNS[op.symbol]
    params = [Var(p) for p in op.params]
    return lambda *xs: evaluate_term(op.body, dict(zip(params, xs, strict=True)))


binary_ops = st.one_of(
    st.sampled_from(["+", "max", "fst", "snd"]).map(BuiltinOp),
    terms([Var("x"), Var("y")], allow_cur=False, max_leaves=3).map(
        lambda t: Lambda(("x", "y"), t)),
)


def base_queries(max_leaves: int = 5):
    """Random base-level queries over {a, b}: atoms, eps, or, split, iter, combine."""
    leaf = st.one_of(
        st.builds(AtomNode, st.sampled_from(TAGS), terms([], allow_cur=True, max_leaves=2)),
        st.builds(Eps, st.builds(Const, data_values)),
    )

    def extend(children):
        return st.one_of(
            st.builds(Or, children, children),
            st.builds(Split, children, children, binary_ops),
            st.builds(Iter, children, data_values, binary_ops),
            st.builds(lambda a, b, op: Combine((a, b), op), children, children, binary_ops),
        )

    return st.recursive(leaf, extend, max_leaves=max_leaves)


def small_words(max_len: int = 5):
    return st.lists(st.tuples(st.sampled_from(TAGS), data_values), max_size=max_len)


@given(base_queries(), small_words())
def test_or_of_a_query_with_itself_is_top_where_it_matches(q, word):
    for j, v in enumerate(prefix_meanings(Or(q, q), word)):
        base = meaning(q, word[:j])
        assert v is (BOT if base is BOT else TOP)


@given(base_queries(), small_words(), data_values)
def test_eps_is_a_unit_of_split(q, word, c):
    want = prefix_meanings(q, word)
    check(prefix_meanings(Split(Eps(Const(c)), q, SND), word), want)
    check(prefix_meanings(Split(q, Eps(Const(c)), FST), word), want)


@given(base_queries(), base_queries(), binary_ops, small_words())
def test_split_is_the_union_over_all_splits(q1, q2, op, word):
    fn = op_fn(op)
    want: XValue = BOT
    for k in range(len(word) + 1):
        want = union(want, lift(fn, [meaning(q1, word[:k]), meaning(q2, word[k:])]))
    assert same(meaning(Split(q1, q2, op), word), want)


def factorizations(n: int):
    """Every way to cut range(n) into non-empty consecutive pieces, as (start, end) lists."""
    if n == 0:
        yield []
        return
    for cuts in itertools.product([False, True], repeat=n - 1):
        bounds = [0, *(k + 1 for k, cut in enumerate(cuts) if cut), n]
        yield list(itertools.pairwise(bounds))


@given(base_queries(max_leaves=4), data_values, binary_ops, small_words(max_len=5))
def test_iter_is_the_union_over_all_factorizations(body, init, op, word):
    fn = op_fn(op)
    total: XValue = BOT
    for pieces in factorizations(len(word)):
        acc: XValue = init
        for s, e in pieces:
            acc = lift(fn, [acc, meaning(body, word[s:e])])
        total = union(total, acc)
    matches_eps = meaning(body, []) is not BOT
    want = TOP if matches_eps and total is not BOT else total
    assert same(meaning(Iter(body, init, op), word), want)


@given(terms([], allow_cur=True, max_leaves=3), terms([], allow_cur=True, max_leaves=3),
       binary_ops, binary_ops, binary_ops, data_values, data_values,
       st.lists(data_values, min_size=1, max_size=6))
def test_iter_on_one_piece_is_op_of_init_and_the_piece(t1, t2, op, op1, op2, init, c, values):
    # body = a·b*: a word a b^k has exactly one factorization into pieces of a·b*.
    body = Split(AtomNode("a", t1), Iter(AtomNode("b", t2), c, op2), op1)
    word = [("a", values[0]), *(("b", v) for v in values[1:])]
    piece = meaning(body, word)
    assert is_defined(piece)
    assert same(meaning(Iter(body, init, op), word), lift(op_fn(op), [init, piece]))


@given(base_queries(max_leaves=4), data_values, binary_ops, small_words())
def test_prefix_sum_and_fill_follow_their_definitions(q, init, op, word):
    outs = prefix_meanings(q, word)
    acc: XValue = init
    want_sum = []
    for v in outs:
        acc = lift(op_fn(op), [acc, v])
        want_sum.append(acc)
    check(prefix_meanings(PrefixSum(q, init, op), word), want_sum)
    want_fill = []
    for j in range(len(outs)):
        defined = [v for v in outs[: j + 1] if is_defined(v)]
        want_fill.append(defined[-1] if defined else BOT)
    check(prefix_meanings(Fill(q), word), want_fill)
    default = const(-7)
    check(prefix_meanings(FillWith(q, default), word),
          [v if is_defined(v) else -7.0 for v in outs])


# --------------------------------------------------------------------------- names, programs


def test_run_program_lets_in_order():
    prog = Program(
        alphabet=("a", "b"),
        lets=(
            Let("total", Iter(atom("a"), 0.0, PLUS)),
            Let("count", Iter(atom("a", "1"), 0.0, PLUS)),
            Let("avg", Combine((Name("total"), Name("count")), lam("s,n", "s / n"))),
            Let("one", Iter(atom("a", "0"), 1.0, FST)),
        ),
        query=Compare(">", Name("avg"), Name("one")),
    )
    # avg: NaN (0/0) on ε, then 1, 1.5, 2: NaN > 1 is false.
    check(run_program(prog, W("a1 a2 a3")), [0.0, 0.0, 1.0, 1.0])


def test_run_program_outputs_after_every_prefix():
    prog = Program(alphabet=None,
                   lets=(Let("s", Iter(atom("a"), 0.0, PLUS)),
                         Let("twice", Combine((Name("s"), Name("s")), PLUS))),
                   query=Name("twice"))
    check(run_program(prog, W("a1 a2 a4")), [0.0, 2.0, 6.0, 14.0])


def test_lets_see_only_earlier_lets():
    prog = Program(alphabet=None,
                   lets=(Let("x", Name("y")), Let("y", atom("a"))),
                   query=Name("x"))
    with pytest.raises(QreTypeError, match="unknown name 'y'"):
        run_program(prog, W("a1"))
    with pytest.raises(QreTypeError, match="unknown name 'z'"):
        run_program(Program(None, (), Name("z")), [])


def test_meaning_with_env_and_cycles():
    env = {"s": Iter(atom("a"), 0.0, PLUS), "d": Split(Name("s"), Name("s"), PLUS)}
    assert meaning(Name("d"), [], env) == 0.0
    assert meaning(Name("d"), W("a1"), env) is TOP
    with pytest.raises(QreTypeError, match="circular"):
        meaning(Name("x"), [], {"x": Or(Name("y"), eps(1)), "y": Name("x")})


def test_resolve_shares_one_node_per_name():
    env = {"s": Iter(atom("a"), 0.0, PLUS)}
    q = resolve(Combine((Name("s"), Name("s")), PLUS), env)
    assert isinstance(q, Combine)
    assert q.args[0] is q.args[1] is env["s"]
    plain = Split(atom("a"), atom("b"), PLUS)
    assert resolve(plain) is plain


# --------------------------------------------------------------------------- speed


def test_depth_four_query_on_seven_events_is_fast():
    q: Query = PrefixSum(
        Or(eps(0), Split(SKIP, Iter(Or(atom("a"), Split(atom("b"), atom("a"), PLUS)), 0.0, MAX),
                         SND)),
        0.0, PLUS)
    word = W("a1 b2 a3 a1 b2 a2 a1")
    best = math.inf
    for _ in range(5):
        start = time.perf_counter()
        prefix_meanings(q, word)
        best = min(best, time.perf_counter() - start)
    assert best < 0.01


def test_eps_matches_the_empty_word_only():
    """eps(t) is t on ε and ⊥ on every non-empty word (the compiler's differential test)."""
    from dt.terms import Const
    from qre.language.ast import Eps
    from qre.language.semantics import meaning, prefix_meanings

    q = Eps(Const(-2.0))
    assert meaning(q, []) == -2.0
    assert meaning(q, [("a", 1.0)]) is BOT
    assert prefix_meanings(q, [("a", 1.0), ("b", 2.0)])[1:] == [BOT, BOT]
