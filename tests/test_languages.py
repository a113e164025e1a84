"""Tests of dt.languages: emptiness / universality of L and L̄ (seed 003, §5.2.2, §5.3.1).

Expectations are computed independently of the configuration search:
hand-checked examples (one per witness kind), brute force over *all* tag
strings up to a length (the reference evaluator on random data, no
deduplication; Theorem 5.2 says statuses do not depend on data), the rates
of the type checker (qre.language.typing, regular expressions turned into DFAs by
qre.language.automata) for compiled base queries, Figure 26 (temporal queries have
rate Σ*), and the optimizer, which preserves outputs exactly and so cannot
change a shortest witness.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from query_strategies import base_queries, temporal_queries
from strategies import alphabets, arbitrary_dts, data_values, initial_vectors

from codegen.optimize import optimize
from dt.languages import KINDS, LanguageLimitError, OutputLanguages, _replay, languages
from dt.model import DT, Transition
from dt.projection import status_vector
from dt.reference import initial_config, outputs, step
from dt.terms import Apply, Cur, Var
from qre.api import qre
from qre.language import automata as fa
from qre.language.compiler import compile_query
from qre.language.typing import check

V_I, V_IP = Var("i"), Var("i", True)


def atom_dt(alphabet=("a", "b")) -> DT:
    """atom(a, cur) by hand: f' := i + cur on a (i is not kept)."""
    return DT(alphabet, ("i", "f"), ("i",), ("f",), (
        Transition("a", frozenset({V_I}), "f", Apply("add", (V_I, Cur()))),
    ))


def answers(out: OutputLanguages) -> tuple:
    return out.in_l, out.not_in_l, out.in_rate, out.not_in_rate


# --------------------------------------------------------------------------- hand examples


def test_atom_has_language_a():
    (out,) = languages(atom_dt())
    assert out.final == "f"
    assert answers(out) == (("a",), (), ("a",), ())
    assert not (out.empty or out.universal or out.rate_empty or out.rate_universal)


def test_compiled_atom_has_language_a():
    """The compiled atom(a, cur), before and after the optimizer."""
    m = qre("atom(a, cur)", alphabet=["a", "b"])
    for dt in (m.unoptimized, m.dt):
        (out,) = languages(dt)
        assert answers(out) == (("a",), (), ("a",), ())


def test_running_sum_is_universal():
    """iter(atom(a, cur), 0, +) over {a}: defined after every string: no witness outside."""
    (out,) = languages(qre("iter(atom(a, cur), 0, +)", alphabet=["a"]).unoptimized)
    assert answers(out) == ((), None, (), None)
    assert out.universal and out.rate_universal and not out.empty and not out.rate_empty


def test_ambiguous_split_has_universal_rate_but_not_language():
    """README: split(iter a, iter a, +) is defined on ε (one parse), ⊤ after any a."""
    text = "split(iter(atom(a, cur), 0, +), iter(atom(a, cur), 0, +), +)"
    (out,) = languages(qre(text, alphabet=["a"]).unoptimized)
    assert answers(out) == ((), ("a",), (), None)
    assert out.rate_universal and not out.universal


def test_conflict_only_output_has_empty_language():
    """f' := i twice on a: ⊤ (d ⊔ d = ⊤ even for equal d), so L = ∅ but L̄ = {a}."""
    t = Transition("a", frozenset({V_I}), "f", V_I)
    dt = DT(("a", "b"), ("i", "f"), ("i",), ("f",), (t, t))
    (out,) = languages(dt)
    assert answers(out) == (None, (), ("a",), ())
    assert out.empty and not out.rate_empty


def test_undefined_initial_vector_gives_empty_rate():
    """With x = ⊥ nothing is ever defined: L̄ = ∅ and the search stops at one configuration."""
    (out,) = languages(atom_dt(), (0,))
    assert answers(out) == (None, (), None, ())
    assert out.empty and out.rate_empty and out.explored == 1


def test_conflict_initial_vector():
    """With x = ⊤ the atom outputs ⊤ after a: L = ∅, L̄ = {a}."""
    (out,) = languages(atom_dt(), (2,))
    assert answers(out) == (None, (), ("a",), ())


def test_late_witness_and_tag_order():
    """split(a, split(a, b)) over the alphabet (b, a): the only string is a·a·b; the shortest
    strings outside L are tied at length 0; sorted tags break ties."""
    m = qre("split(atom(a, cur), split(atom(a, cur), atom(b, cur), +), +)",
            alphabet=["b", "a"])
    (out,) = languages(m.unoptimized)
    assert answers(out) == (("a", "a", "b"), (), ("a", "a", "b"), ())


def test_first_not_in_rate_after_a_nonempty_prefix():
    """Echo with a keep-alive on a only: i' := i on a. Defined on a*, ⊥ from the first b."""
    dt = DT(("b", "a"), ("i",), ("i",), ("i",), (Transition("a", frozenset({V_I}), "i", V_I),))
    (out,) = languages(dt)
    assert answers(out) == ((), ("b",), (), ("b",))
    # a (tried first) leads back to the start; b discovers ⊥ and completes the answers.
    assert out.explored == 2


def test_several_outputs_in_final_order():
    atom = atom_dt()
    dt = DT(atom.alphabet, atom.states, atom.initial, ("f", "i"), atom.transitions)
    f, i = languages(dt)
    assert (f.final, i.final) == ("f", "i")
    assert answers(f) == (("a",), (), ("a",), ())
    assert answers(i) == ((), ("a",), (), ("a",))
    assert f.explored == i.explored


def test_no_outputs():
    atom = atom_dt()
    assert languages(DT(atom.alphabet, atom.states, atom.initial, (), atom.transitions)) == ()


def test_limit_is_an_explicit_unknown():
    """The universal running sum needs its full reachable space; a smaller limit raises."""
    dt = qre("iter(atom(a, cur), 0, +)", alphabet=["a"]).unoptimized
    full = languages(dt)
    explored = full[0].explored
    assert full[0].universal and explored > 1
    with pytest.raises(LanguageLimitError, match="undecided") as info:
        languages(dt, max_configs=explored - 1)
    assert isinstance(info.value, ValueError) and info.value.explored == explored
    assert languages(dt, max_configs=explored) == full


def test_wrong_initial_vector_length():
    with pytest.raises(ValueError, match="initial vector has 2 statuses"):
        languages(atom_dt(), (1, 1))


def test_replay_rejects_wrong_claims():
    dt = atom_dt()
    _replay(dt, (1,), {(0, "in_l"): ("a",), (0, "not_in_rate"): ()})  # true answers pass
    with pytest.raises(AssertionError, match="does not replay"):
        _replay(dt, (1,), {(0, "in_l"): ("b",)})
    with pytest.raises(AssertionError, match="not shortest"):
        _replay(dt, (1,), {(0, "not_in_l"): ("a", "a")})


# --------------------------------------------------------------------------- brute force


def brute_statuses(dt: DT, x, data: list[float], depth: int) -> dict[tuple[str, ...], tuple]:
    """Output statuses after every tag string up to ``depth`` (reference evaluator, the k-th
    event of every string carries data[k]); every string is run, nothing is merged."""
    result = {}
    level = [((), initial_config(dt, x))]
    for k in range(depth + 1):
        for w, c in level:
            result[w] = status_vector(outputs(dt, c))
        if k < depth:
            level = [((*w, t), step(dt, c, t, data[k])) for w, c in level for t in dt.alphabet]
    return result


def shortlex_first(strings) -> tuple[str, ...] | None:
    return min(strings, key=lambda w: (len(w), w), default=None)


@given(st.data())
def test_witnesses_against_brute_force(data):
    """Each witness is the shortlex-least string with its property among all strings up to
    the brute-force depth (sorted tags); a missing witness means no such string exists."""
    dt = data.draw(arbitrary_dts(max_states=4, max_transitions=8))
    x = data.draw(initial_vectors(dt))
    depth = {1: 12, 2: 7, 3: 5}[len(dt.alphabet)]
    cur = data.draw(st.lists(data_values, min_size=depth, max_size=depth))
    brute = brute_statuses(dt, x, cur, depth)
    result = languages(dt, status_vector(x))
    assert len(result) == len(dt.final)
    for f, out in enumerate(result):
        assert out.final == dt.final[f]
        for kind, holds in KINDS.items():
            witness = getattr(out, kind)
            first = shortlex_first(w for w, s in brute.items() if holds(s[f]))
            if witness is None:
                assert first is None, (kind, first)
            elif len(witness) <= depth:
                assert witness == first, (kind, witness, first)
            else:
                assert first is None, (kind, witness, first)


# --------------------------------------------------------------------------- compiled queries


@given(st.data())
def test_temporal_queries_have_universal_rate(data):
    """Figure 26: the rate of every temporal query is Σ* (output 0/1, never ⊥)."""
    alphabet = data.draw(alphabets(2, 3))
    query = data.draw(temporal_queries(alphabet, depth=2))
    dt = compile_query(check(query, alphabet).query, alphabet).value
    for out in languages(dt):
        assert out.rate_universal and out.not_in_rate is None
        assert out.in_rate == () and not out.rate_empty


@given(st.data())
def test_base_query_rate_matches_the_type_checker(data):
    """L̄ of the compiled DT equals the rate the type checker computes (Figure 26), and the
    shortest witnesses agree with the rate's DFA (both shortlex-least in sorted tag order)."""
    alphabet = data.draw(alphabets(2, 3))
    query = data.draw(base_queries(alphabet, depth=3))
    typed = check(query, alphabet)
    dt = compile_query(typed.query, alphabet).value
    (out,) = languages(dt)
    tags = sorted(alphabet)
    assert out.in_rate == fa.shortest_word(typed.rate, tags)
    assert out.not_in_rate == fa.shortest_word(fa.complement(typed.rate, tags))
    # L ⊆ L̄: a string in L is in L̄, a string outside L̄ is outside L.
    if out.in_l is not None:
        assert out.in_rate is not None and len(out.in_rate) <= len(out.in_l)
    if out.not_in_rate is not None:
        assert out.not_in_l is not None and len(out.not_in_l) <= len(out.not_in_rate)


@given(st.data())
def test_optimizer_keeps_the_witnesses(data):
    """The optimizer preserves outputs exactly, so the shortlex-least witnesses are equal."""
    alphabet = data.draw(alphabets(2, 3))
    query = data.draw(st.one_of(base_queries(alphabet, depth=2),
                                temporal_queries(alphabet, depth=1)))
    dt = compile_query(check(query, alphabet).query, alphabet).value
    assert [answers(o) for o in languages(dt)] == [answers(o) for o in languages(optimize(dt))]


def test_every_kind_is_met_by_some_string():
    """Sanity of KINDS: each status satisfies exactly one of in_l / not_in_l and one of
    in_rate / not_in_rate."""
    for s in (0, 1, 2):
        assert KINDS["in_l"](s) != KINDS["not_in_l"](s)
        assert KINDS["in_rate"](s) != KINDS["not_in_rate"](s)
    assert [s for s in (0, 1, 2) if KINDS["in_rate"](s)] == [1, 2]
    assert list(itertools.compress((0, 1, 2), map(KINDS["in_l"], (0, 1, 2)))) == [1]
