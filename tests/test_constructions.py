"""The constructions of seed 003 §5.2 against the equations the paper states for them.

Every semantic test runs the constructed DT with the reference interpreter and
compares its output after *every* prefix of a random word, status and value
exactly, with the brute-force semantics of :mod:`brute`, which only runs the
*components* and combines their outputs as the paper's equation says:

* parallel ``(A1(x, w), A2(x, w))``, union ``A1(x, w) ⊔ A2(x, w)``, A · G
  ``G(A(x, w))``, G · A ``A(G(x), w)`` and prefix sum hold for any DTs and any
  extended initial vector (§5.2.1), so those tests use arbitrary DTs as well;
* concatenation ``⊔_{w = w1 w2} A2(A1(x, w1), w2)`` and iteration
  ``⊔_{w = w1…wk} A(…A(x, w1)…, wk)`` need an output-synchronized left side /
  body and a restartable right side / body (§5.2.2): restartable components
  come from :mod:`components`.

Also: the size bounds of §5.2 with the smallest constants this implementation
meets, the preconditions, the facts of Theorem 5.5, fresh state names, and
Definition 5.4 (iii) checked along random runs with restarts for every
generated component (and shown to fail on the paper's counterexample).
"""

from __future__ import annotations

import pytest
from brute import (
    apply_function,
    concat_outputs,
    function_then_outputs,
    iterate_outputs,
    parallel_outputs,
    prefix_sum_outputs,
    restarted_outputs,
    then_function_outputs,
    threaded_outputs,
    union_outputs,
)
from components import (
    Atom,
    Component,
    Iter,
    Tree,
    Union,
    X,
    build,
    components,
    nullable,
    same_rate_trees,
    total_trees,
    words_for,
)
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import DATA, arbitrary_dts, data_values, extended_values, terms, words
from util import assert_same_outputs, same_vector

from dt import constructions as c
from dt.errors import PreconditionError
from dt.functions import DataFunction, FunctionEntry
from dt.model import DT, Transition
from dt.reference import evaluate
from dt.terms import Apply, Const, Cur, Var, evaluate_term
from dt.values import BOT, TOP

AB = ("a", "b")
ABC = ("a", "b", "c")

alphabets = st.sampled_from([AB, ABC])

# Restart values X = {⊥} ∪ D ∪ {⊤} (Definition 5.4), mostly ⊥ so that threads stay
# few and outputs are not all ⊤ after two restarts.
restart_values = st.sampled_from([BOT] * 7 + DATA + [TOP])

# Initial vectors: any extended value, but mostly defined (⊥ inputs make dull runs).
initial_values = st.one_of(data_values, extended_values)


# --------------------------------------------------------------------------- strategies


@st.composite
def interface_dts(draw, alphabet: tuple[str, ...], n_in: int, n_out: int) -> DT:
    """An arbitrary DT (cycles, unprimed reads, init/eps transitions) with |I| = n_in, |F| = n_out.

    Built directly with ``DT(...)``, so its facts are unknown.
    """
    d = draw(arbitrary_dts(alphabet=alphabet, max_states=4, max_transitions=6))
    states = list(d.states) + [f"p{k}" for k in range(max(n_in, n_out) - len(d.states))]
    initial = draw(st.permutations(states))[:n_in]
    final = draw(st.permutations(states))[:n_out]
    return DT(alphabet, tuple(states), tuple(initial), tuple(final), d.transitions)


def any_dts(alphabet: tuple[str, ...], n_in: int, n_out: int):
    """Arbitrary DTs of the interface; for 1 ⇉ 1 and 1 ⇉ 2 also restartable components
    and total ones (defined on every word), so that outputs after events are often defined."""
    arbitrary = interface_dts(alphabet, n_in, n_out)
    total = total_trees(alphabet).map(lambda t: build(t, alphabet))
    if (n_in, n_out) == (1, 1):
        return st.one_of(arbitrary, components(alphabet, depth=2).map(lambda k: k.dt), total)
    if (n_in, n_out) == (1, 2):
        return st.one_of(arbitrary, st.tuples(total, total).map(lambda p: c.parallel(*p)))
    return arbitrary


@st.composite
def data_functions(draw, inputs: tuple[str, ...], outputs: tuple[str, ...], *,
                   strict: bool = False, max_entries: int = 2) -> DataFunction:
    """G : inputs ⇒ outputs with 0..max_entries entries per output and random sources.

    ``strict``: every entry has at least one source (required for G · A).
    """
    entries = []
    for o in outputs:
        for _ in range(draw(st.integers(0 if max_entries > 1 else 1, max_entries))):
            sources = draw(st.lists(st.sampled_from(inputs), unique=True,
                                    min_size=1 if strict else 0)) if inputs else []
            term = draw(terms([Var(s) for s in sources], allow_cur=False, max_leaves=3))
            entries.append(FunctionEntry(o, frozenset(sources), term))
    return DataFunction(inputs, outputs, tuple(entries))


def names(prefix: str, n: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{k}" for k in range(n))


def vectors(n: int, values=extended_values):
    return st.tuples(*[values] * n)


@st.composite
def restart_scenarios(draw, dt: DT, rate: list[Tree]):
    """(x0, word, restarts): the initial vector and one restart vector per event, all in X.

    Words are random or in the rate of ``rate`` (so that restarted threads match).
    """
    def in_x():
        # X = {⊥}^I ∪ (D ∪ {⊤})^I: all undefined or all not undefined.
        return st.one_of(
            st.just((BOT,) * len(dt.initial)),
            vectors(len(dt.initial), st.sampled_from([*DATA, TOP])),
        ) if len(dt.initial) != 1 else restart_values.map(lambda v: (v,))

    word = draw(words_for(rate, dt.alphabet))
    x0 = draw(in_x())
    restarts = [draw(in_x()) for _ in word]
    return x0, word, restarts


# --------------------------------------------------------------------------- base DTs (§5.3.2)


def _term_at(term, x, cur=None):  # type: ignore[no-untyped-def]
    """t[x := x] on one event: strict in x (the atom's source is i whatever t reads)."""
    if x is BOT or x is TOP:
        return x
    return evaluate_term(term, {X: x}, cur)


@given(alphabet=alphabets, data=st.data(), x=extended_values)
def test_atom_matches_exactly_one_event_of_its_tag(alphabet, data, x):
    tag = data.draw(st.sampled_from(alphabet))
    term = data.draw(st.one_of(st.just(X), terms([X], allow_cur=True)))
    word = data.draw(st.one_of(words(alphabet, max_len=3),
                               data_values.map(lambda d: [(tag, d)])))
    d = c.atom(alphabet, tag, term) if term != X else c.identity_atom(alphabet, tag)
    want = [(BOT,)] * (len(word) + 1)
    if word and word[0][0] == tag:
        want[1] = (_term_at(term, x, word[0][1]),)
    assert_same_outputs(evaluate(d, (x,), word), want)


@given(alphabet=alphabets, data=st.data(), x=extended_values)
def test_epsilon_matches_the_empty_word_only(alphabet, data, x):
    term = data.draw(st.one_of(st.just(X), terms([X], allow_cur=False)))
    word = data.draw(words(alphabet, max_len=3))
    d = c.epsilon(alphabet, term) if term != X else c.identity_epsilon(alphabet)
    want = [(_term_at(term, x),)] + [(BOT,)] * len(word)
    assert_same_outputs(evaluate(d, (x,), word), want)


# --------------------------------------------------------------------------- §5.2.1


@given(data=st.data(), alphabet=alphabets, k=st.integers(1, 3),
       n_in=st.sampled_from([1, 1, 0, 2]))
def test_parallel_is_the_tuple_of_outputs(data, alphabet, k, n_in):
    dts = [data.draw(any_dts(alphabet, n_in, data.draw(st.integers(1, 2)))) for _ in range(k)]
    x = data.draw(vectors(n_in, initial_values))
    word = data.draw(words(alphabet))
    got = c.parallel(*dts)
    assert len(got.initial) == n_in
    assert len(got.final) == sum(len(d.final) for d in dts)
    assert_same_outputs(evaluate(got, x, word), parallel_outputs(dts, x, word))


@given(data=st.data(), alphabet=alphabets, n_in=st.sampled_from([1, 1, 0, 2]),
       n_out=st.integers(1, 2))
def test_union_is_the_union_of_outputs(data, alphabet, n_in, n_out):
    a1 = data.draw(any_dts(alphabet, n_in, n_out))
    a2 = data.draw(any_dts(alphabet, n_in, n_out))
    x = data.draw(vectors(n_in, initial_values))
    word = data.draw(words(alphabet))
    assert_same_outputs(evaluate(c.union(a1, a2), x, word), union_outputs(a1, a2, x, word))


@given(data=st.data(), alphabet=alphabets,
       shape=st.sampled_from([(1, 1, 1), (1, 1, 2), (1, 2, 1), (0, 1, 1), (2, 1, 1), (2, 2, 2)]))
@settings(max_examples=200)
def test_prefix_sum_folds_g_over_the_outputs(data, alphabet, shape):
    n_in, n_z, n_acc = shape
    a = data.draw(any_dts(alphabet, n_in, n_z))
    inputs, outputs = (*names("acc", n_acc), *names("z", n_z)), names("s", n_acc)
    # Mostly the paper's G (one term per output, strict in every input), also any G.
    paper_g = st.lists(terms([Var(v) for v in inputs], allow_cur=False),
                       min_size=n_acc, max_size=n_acc).map(
        lambda ts: DataFunction.of(inputs, zip(outputs, ts, strict=True)))
    g = data.draw(st.one_of(paper_g, data_functions(inputs, outputs)))
    x = data.draw(vectors(n_in, initial_values))
    y = data.draw(vectors(n_acc, initial_values))
    word = data.draw(words(alphabet))
    got = c.prefix_sum(a, g)
    assert_same_outputs(evaluate(got, (*x, *y), word), prefix_sum_outputs(a, g, x, y, word))


# --------------------------------------------------------------------------- data functions


@given(data=st.data(), n_in=st.integers(0, 3), n_out=st.integers(1, 2))
def test_data_function_apply_and_dt_match_the_definition(data, n_in, n_out):
    """[[G]] by DataFunction.apply and by G as a memoryless DT (§5.2.1), on every prefix."""
    g = data.draw(data_functions(names("u", n_in), names("v", n_out)))
    x = data.draw(vectors(n_in))
    want = apply_function(g, x)
    assert same_vector(g.apply(x), want)
    word = data.draw(words(AB, max_len=3))
    got = evaluate(g.to_dt(AB), x, word)
    # On the empty word G(x); afterwards its inputs are ⊥ again, so G(⊥, …, ⊥).
    assert_same_outputs(got, [want] + [apply_function(g, (BOT,) * n_in)] * len(word))


@given(data=st.data(), alphabet=alphabets,
       shape=st.sampled_from([(1, 1, 1), (1, 2, 1), (1, 2, 2), (1, 1, 2), (0, 1, 1), (2, 2, 1)]))
@settings(max_examples=80)
def test_dt_then_function_applies_g_to_every_output(data, alphabet, shape):
    n_in, n_z, n_out = shape
    a = data.draw(any_dts(alphabet, n_in, n_z))
    g = data.draw(data_functions(names("z", n_z), names("v", n_out)))
    x = data.draw(vectors(n_in, initial_values))
    word = data.draw(words(alphabet))
    assert_same_outputs(evaluate(c.concat(a, g), x, word), then_function_outputs(a, g, x, word))


@given(data=st.data(), alphabet=alphabets,
       shape=st.sampled_from([(1, 1, 1), (2, 1, 1), (1, 1, 2), (2, 2, 1), (1, 0, 1), (2, 2, 2)]))
@settings(max_examples=80)
def test_function_then_dt_starts_a_from_g_of_x(data, alphabet, shape):
    n_in, n_z, n_out = shape
    a = data.draw(any_dts(alphabet, n_z, n_out))
    g = data.draw(data_functions(names("u", n_in), names("z", n_z), strict=True))
    x = data.draw(vectors(n_in, initial_values))
    word = data.draw(words(alphabet))
    assert_same_outputs(evaluate(c.concat(g, a), x, word), function_then_outputs(g, a, x, word))


# --------------------------------------------------------------------------- §5.2.2


@st.composite
def concat_pairs(draw, alphabet: tuple[str, ...]) -> tuple[DT, DT, bool, list[Tree]]:
    """(A1, A2, assume, rate): A1 output-synchronized, A2 restartable; words in ``rate`` match.

    Shapes: component · component; arbitrary 1-output DT · component (A1 is
    output-synchronized because |F| = 1, but its facts are unknown, hence
    assume=True); component · (B ∥ C) (a 1 ⇉ 2 restartable right side);
    combine-like (B ∥ B') 1 ⇉ 2 with equal rates · (G · C) with G : 2 ⇒ 1.
    """
    shape = draw(st.sampled_from(["components", "arbitrary_left", "parallel_right",
                                  "two_wide"]))
    comp = components(alphabet, depth=2)
    if shape == "components":
        k1, k2 = draw(comp), draw(comp)
        return k1.dt, k2.dt, False, [k1.tree, k2.tree]
    if shape == "arbitrary_left":
        k2 = draw(comp)
        return draw(interface_dts(alphabet, draw(st.integers(0, 2)), 1)), k2.dt, True, [k2.tree]
    if shape == "parallel_right":
        k1, k2, k3 = draw(comp), draw(comp), draw(comp)
        return k1.dt, c.parallel(k2.dt, k3.dt), False, [k1.tree, k2.tree]
    b, k = draw(comp), draw(comp)
    left = c.parallel(b.dt, build(draw(same_rate_trees(b.tree)), alphabet), same_rate=True)
    g = DataFunction.of(("p", "q"), {"r": draw(terms([Var("p"), Var("q")], allow_cur=False))})
    return left, c.concat(g, k.dt), False, [b.tree, k.tree]


@given(data=st.data(), alphabet=alphabets)
@settings(max_examples=300)
def test_concat_is_the_union_over_splits(data, alphabet):
    left, right, assume_, rate = data.draw(concat_pairs(alphabet))
    x = data.draw(vectors(len(left.initial), initial_values))
    word = data.draw(words_for(rate, alphabet))
    got = c.concat(left, right, assume=assume_)
    assert_same_outputs(evaluate(got, x, word), concat_outputs(left, right, x, word))


def _bottom_on_empty(k: Component) -> bool:
    return evaluate(k.dt, (1.0,), [])[0] == (BOT,)


@given(data=st.data(), alphabet=alphabets)
@settings(max_examples=300)
def test_iterate_is_the_union_over_factorizations(data, alphabet):
    body = data.draw(components(alphabet, depth=2, nonempty=True).filter(_bottom_on_empty))
    x = data.draw(vectors(1, initial_values))
    word = data.draw(words_for([Iter(body.tree)], alphabet))
    got = c.iterate(body.dt)
    assert_same_outputs(evaluate(got, x, word), iterate_outputs(body.dt, x, word))


@given(data=st.data(), alphabet=alphabets, x=data_values)
def test_nullable_matches_the_reference_and_a_nullable_body_makes_iteration_top(
        data, alphabet, x):
    """§5.2.2: "if A1 produces output on the empty data word, then A1* will always be ⊤"
    (for a defined input, on the empty word; afterwards the unfed cycle is ⊥ again)."""
    k = data.draw(components(alphabet, depth=2))
    assert (evaluate(k.dt, (x,), [])[0] != (BOT,)) == nullable(k.tree)
    if nullable(k.tree):
        assert evaluate(c.iterate(k.dt), (x,), [])[0] == (TOP,)


@pytest.mark.parametrize("body", [
    c.epsilon(AB, Apply("add", (X, Const(1.0)))),
    c.identity_epsilon(AB),
    c.union(c.identity_atom(AB, "a"), c.identity_epsilon(AB)),
    c.concat(c.identity_epsilon(AB), c.identity_epsilon(AB)),
])
def test_iteration_of_a_body_with_the_empty_word_in_its_rate_is_top(body):
    assert evaluate(c.iterate(body), (2.0,), [])[0] == (TOP,)
    assert evaluate(c.iterate(body), (TOP,), [])[0] == (TOP,)
    assert evaluate(c.iterate(body), (BOT,), [])[0] == (BOT,)


def test_iteration_worked_example():
    """(atom(a, x + cur))* on a a: factorizations a|a only, so x + 1 + 2; and x on ε."""
    star = c.iterate(c.atom(AB, "a", Apply("add", (X, Cur()))))
    assert evaluate(star, (10.0,), [("a", 1.0), ("a", 2.0), ("b", 0.0)]) == [
        (10.0,), (11.0,), (13.0,), (BOT,)]
    # Two factorizations of "a a" (a|a and aa): a conflict.
    two = c.iterate(c.union(c.identity_atom(AB, "a"),
                            c.concat(c.identity_atom(AB, "a"), c.identity_atom(AB, "a"))))
    assert evaluate(two, (1.0,), [("a", 0.0), ("a", 0.0)]) == [(1.0,), (1.0,), (TOP,)]


# --------------------------------------------------------------------------- sizes


# The smallest constants this implementation meets (overhead = size(result) minus the
# components' sizes; every glue copy (ε, {q'}, r', q') has size 3 and every fresh state 1).
C_PARALLEL = 7  # |I| fresh states + 2·3|I| copies (k = 2; k components: (1 + 3k)|I|)
C_UNION = 7  # |I| + |F| fresh states + 2·3(|I| + |F|) copies
C_CONCAT = 3  # 3|Z| copies
C_ITERATE = 7  # |I| fresh states + 2·3|I| copies


def c_prefix_sum(alphabet: tuple[str, ...]) -> int:
    """Per accumulator: 1 fresh state, 3 for its ε copy, 3 per tag for the feedback.

    With 3 per ε copy of Z the overhead is 3|Z| + (4 + 3|Σ|)|F| ≤ c(|Z| + |F|).
    """
    return 4 + 3 * len(alphabet)


def function_dt_overhead(g: DataFunction) -> int:
    """size(G as a DT) − size(G): one state per input and output, sources and target per entry."""
    return len(g.inputs) + len(g.outputs) + sum(len(e.sources) + 1 for e in g.entries)


@given(data=st.data(), alphabet=alphabets, n_in=st.integers(0, 2), n_out=st.integers(1, 2))
@settings(max_examples=40)
def test_size_bounds(data, alphabet, n_in, n_out):
    a1 = data.draw(interface_dts(alphabet, n_in, n_out))
    a2 = data.draw(interface_dts(alphabet, n_in, n_out))
    k1, k2 = data.draw(components(alphabet, depth=2)), data.draw(components(alphabet, depth=2))

    assert c.parallel(a1, a2).size <= a1.size + a2.size + C_PARALLEL * n_in
    assert c.union(a1, a2).size <= a1.size + a2.size + C_UNION * (n_in + n_out)
    assert c.concat(k1.dt, k2.dt).size <= k1.dt.size + k2.dt.size + C_CONCAT * 1
    assert c.iterate(k1.dt).size <= k1.dt.size + C_ITERATE * 1

    g = data.draw(data_functions(names("z", n_out), names("v", data.draw(st.integers(1, 2)))))
    assert g.to_dt(alphabet).size == g.size + function_dt_overhead(g)
    gdt = g.to_dt(alphabet).size
    assert c.concat(a1, g).size <= a1.size + gdt + C_CONCAT * n_out
    h = data.draw(data_functions(names("u", 2), names("z", n_in), strict=True))
    assert c.concat(h, a1).size <= h.to_dt(alphabet).size + a1.size + C_CONCAT * n_in

    n_acc = data.draw(st.integers(1, 2))
    p = data.draw(data_functions((*names("acc", n_acc), *names("z", n_out)), names("s", n_acc)))
    assert c.prefix_sum(a1, p).size <= (a1.size + p.to_dt(alphabet).size
                                        + c_prefix_sum(alphabet) * (n_out + n_acc))


def test_size_constants_are_attained():
    """The constants above are the smallest: the 1 ⇉ 1 atom reaches each of them."""
    a = c.identity_atom(AB, "a")
    g = DataFunction.of(("z",), {"s": Var("z")})
    assert c.parallel(a, a).size == 2 * a.size + C_PARALLEL
    assert c.union(a, a).size == 2 * a.size + C_UNION * 2
    assert c.concat(a, a).size == 2 * a.size + C_CONCAT
    assert c.iterate(a).size == a.size + C_ITERATE
    # Prefix sum: 3|Z| + c·|F| — the bound c(|Z| + |F|) is approached as |F| grows.
    p = DataFunction.of(("acc", "z"), {"s": Apply("add", (Var("acc"), Var("z")))})
    assert c.prefix_sum(a, p).size == a.size + p.to_dt(AB).size + 3 + c_prefix_sum(AB)
    assert c.concat(a, g).size == a.size + g.to_dt(AB).size + C_CONCAT


# --------------------------------------------------------------------------- preconditions


def _unknown_facts(d: DT) -> DT:
    """The same DT rebuilt with DT(...), as if read from JSON: its facts are unknown."""
    return DT(d.alphabet, d.states, d.initial, d.final, d.transitions)


def test_concat_decides_or_establishes_a_restartable_right_side():
    """A right side of unknown restartability is decided (Theorem 5.6): kept when it is
    restartable; otherwise replaced by its restartable form (§5.2.2, last paragraph), and
    the concatenation still means the §5.2.2 union over splits of the *original* right side."""
    left = c.identity_atom(AB, "a")
    right = _unknown_facts(c.atom(AB, "b", Apply("add", (X, Cur()))))
    assert right.facts.restartable is None
    word = [("a", 1.0), ("b", 2.0)]
    kept = c.concat(left, right)
    assert kept.facts.restartable is True and len(kept.states) == len(c.concat(left, right,
                                                                              assume=True).states)
    assert_same_outputs(evaluate(kept, (5.0,), word), concat_outputs(left, right, (5.0,), word))
    # On b, i' := i and f' := i' + cur (the seed's counterexample, on b): every b answers.
    keeps = DT(AB, ("i", "f"), ("i",), ("f",), (
        Transition("b", frozenset({Var("i")}), "i", Var("i")),
        Transition("b", frozenset({Var("i", True)}), "f", Apply("add", (Var("i", True), Cur()))),
    ))
    made = c.concat(left, keeps)
    assert len(made.states) > len(c.concat(left, keeps, assume=True).states)
    for word in ([("a", 1.0), ("b", 2.0), ("b", 3.0)], [("a", 1.0), ("a", 2.0), ("b", 3.0)]):
        assert_same_outputs(evaluate(made, (5.0,), word), concat_outputs(left, keeps, (5.0,), word))
    # A right side that outputs with no input has no restartable form.
    loud = DT(AB, ("i", "f"), ("i",), ("f",), (Transition("b", frozenset(), "f", Const(1.0)),))
    with pytest.raises(PreconditionError, match="every input ⊥"):
        c.concat(left, loud)


def test_concat_requires_an_output_synchronized_left_side():
    # Two components of different rates: (A ∥ B) is not output-synchronized.
    a, b = c.identity_atom(AB, "a"), c.identity_epsilon(AB)
    both = c.parallel(a, b)
    assert both.facts.output_synchronized is None
    g = c.concat(DataFunction.of(("p", "q"), {"r": Apply("add", (Var("p"), Var("q")))}), a)
    with pytest.raises(PreconditionError):
        c.concat(both, g)
    c.concat(both, g, assume=True)


def test_iterate_requires_restartable_and_square():
    body = _unknown_facts(c.identity_atom(AB, "a"))
    assert c.iterate(body).facts.restartable is True  # decided restartable, then kept
    c.iterate(body, assume=True)
    with pytest.raises(ValueError):
        c.iterate(c.parallel(c.identity_atom(AB, "a"), c.identity_atom(AB, "b")))


def test_interface_mismatches_raise():
    one = c.identity_atom(AB, "a")
    two = c.parallel(one, one)  # 1 ⇉ 2
    wide = c.concat(DataFunction.of(("u", "w"), {"z": Var("u")}), one)  # 2 ⇉ 1
    with pytest.raises(ValueError):
        c.concat(two, one, assume=True)  # |F1| = 2 ≠ |I2| = 1
    with pytest.raises(ValueError):
        c.union(one, two)  # |F| differ
    with pytest.raises(ValueError):
        c.union(one, wide)  # |I| differ
    with pytest.raises(ValueError):
        c.parallel(one, wide)  # |I| differ
    with pytest.raises(ValueError):
        c.concat(one, DataFunction.of(("p", "q"), {"r": Var("p")}))  # A · G: 1 output, 2 inputs
    with pytest.raises(ValueError):
        c.concat(DataFunction.of(("u",), {"p": Var("u"), "q": Var("u")}), one)  # G · A: 2 vs 1
    with pytest.raises(ValueError):
        c.prefix_sum(one, DataFunction.of(("acc",), {"s": Var("acc")}))  # no input for Z


def test_alphabet_mismatches_raise():
    ab, abc = c.identity_atom(AB, "a"), c.identity_atom(ABC, "a")
    for build_ in (lambda: c.parallel(ab, abc), lambda: c.union(ab, abc),
                   lambda: c.concat(ab, abc)):
        with pytest.raises(ValueError):
            build_()
    with pytest.raises(ValueError):
        c.atom(AB, "c", X)


def test_function_then_dt_refuses_a_constant_entry():
    a = c.identity_atom(AB, "a")
    constant = DataFunction.of(("u",), {"z": Const(1.0)}, sources=())
    with pytest.raises(PreconditionError):
        c.concat(constant, a)
    # The same term strict in its input is fine (the paper's G_init).
    c.concat(DataFunction.of(("u",), {"z": Const(1.0)}), a)


# --------------------------------------------------------------------------- facts


def _restartable_and_synchronized(d: DT) -> bool:
    return d.facts.restartable is True and d.facts.output_synchronized is True


@given(data=st.data(), alphabet=alphabets)
@settings(max_examples=40)
def test_facts_follow_theorem_5_5(data, alphabet):
    k1 = data.draw(components(alphabet, depth=3))
    k2 = data.draw(components(alphabet, depth=2))
    a, b = k1.dt, k2.dt
    assert _restartable_and_synchronized(a) and _restartable_and_synchronized(b)
    assert _restartable_and_synchronized(c.union(a, b))
    assert _restartable_and_synchronized(c.concat(a, b))
    if evaluate(a, (1.0,), [])[0] == (BOT,):
        assert _restartable_and_synchronized(c.iterate(a))
    both = c.parallel(a, b)
    # Restartable (Theorem 5.5) but output-synchronized only for equal rates.
    assert both.facts.restartable is True
    assert both.facts.output_synchronized is None
    add = DataFunction.of(("p", "q"), {"r": Apply("add", (Var("p"), Var("q")))})
    assert c.concat(both, add).facts.restartable is None
    same = c.parallel(a, build(k1.tree, alphabet), same_rate=True)
    assert _restartable_and_synchronized(same)
    assert c.concat(same, add).facts.restartable is True
    # A · G with a constant entry fires on every step: not restartable.
    const = DataFunction.of(("z",), {"v": Const(1.0)}, sources=())
    assert c.concat(a, const).facts.restartable is None
    # Facts are not inherited from unknown components.
    unknown = _unknown_facts(a)
    assert unknown.facts.restartable is None
    assert c.union(unknown, b).facts.restartable is None
    assert c.parallel(unknown, b).facts.restartable is None
    assert c.concat(a, unknown, assume=True).facts.restartable is None
    assert c.concat(unknown, b, assume=True).facts.restartable is None
    assert c.iterate(unknown, assume=True).facts.restartable is None


def test_prefix_sum_facts():
    a = build(Iter(Union(Atom("a", X), Atom("b", Apply("add", (X, Cur()))))), AB)
    single = DataFunction.of(("acc", "z"), {"s": Apply("add", (Var("acc"), Var("z")))})
    double = DataFunction.of(("acc", "z"), [("s", Var("acc")), ("s", Var("z"))])
    assert c.prefix_sum(a, single).facts.restartable is None  # totality not asserted
    assert c.prefix_sum(a, single, total=True).facts.restartable is True
    assert c.prefix_sum(a, double, total=True).facts.restartable is None
    assert c.prefix_sum(_unknown_facts(a), single, total=True).facts.restartable is None


# --------------------------------------------------------------------------- fresh names


@given(k=components(AB, depth=2), word=words(AB), x=extended_values)
@settings(max_examples=30)
def test_embedding_one_dt_twice_does_not_clash(k, word, x):
    """Q = Q1 ∪ Q2 ∪ glue as disjoint unions (§5.2.1 notation), even when A1 = A2."""
    a = k.dt
    n = len(a.states)
    for got, want, states in [
        (c.union(a, a), union_outputs(a, a, (x,), word), 2 * n + 2),  # Q1 ∪ Q2 ∪ I ∪ F
        (c.parallel(a, a, a), parallel_outputs([a, a, a], (x,), word), 3 * n + 1),  # ∪ I
        (c.concat(a, a), concat_outputs(a, a, (x,), word), 2 * n),  # Q1 ∪ Q2
        (c.iterate(c.identity_atom(AB, "a")), None, 3),  # Q1 ∪ I
    ]:
        assert len(set(got.states)) == len(got.states) == states
        if want is not None:
            assert_same_outputs(evaluate(got, (x,), word), want)
    inner = c.union(a, a)
    nested = c.union(inner, a)
    assert len(set(nested.states)) == len(nested.states) == (2 * n + 2) + n + 2
    assert_same_outputs(evaluate(nested, (x,), word), union_outputs(inner, a, (x,), word))


# --------------------------------------------------------------------------- restartability


def restart_check(dt: DT, x0, word, restarts) -> tuple[list, list]:  # type: ignore[no-untyped-def]
    """Definition 5.4 (iii) along one run: one configuration vs the union of its threads."""
    return (restarted_outputs(dt, x0, word, restarts),
            threaded_outputs(dt, x0, word, restarts))


@given(data=st.data(), alphabet=alphabets)
@settings(max_examples=300)
def test_components_are_restartable_along_random_runs(data, alphabet):
    """Theorem 5.5: every construction of a component preserves restartability."""
    ks = data.draw(st.one_of(st.tuples(components(alphabet, depth=3)),
                             st.tuples(components(alphabet, depth=2),
                                       components(alphabet, depth=2))))
    subject = ks[0].dt if len(ks) == 1 else c.parallel(ks[0].dt, ks[1].dt)
    assert subject.facts.restartable is True
    rate = [Iter(ks[data.draw(st.integers(0, len(ks) - 1))].tree)]
    x0, word, restarts = data.draw(restart_scenarios(subject, rate))
    single, threads = restart_check(subject, x0, word, restarts)
    assert_same_outputs(single, threads)


@given(data=st.data(), alphabet=alphabets)
@settings(max_examples=30)
def test_total_prefix_sum_is_restartable_along_random_runs(data, alphabet):
    """Theorem 5.5, last clause: ⊕_G A with L̄(A) = Σ* and single-term G is restartable."""
    a = build(data.draw(total_trees(alphabet)), alphabet)
    g = DataFunction.of(("acc", "z"),
                        {"s": data.draw(terms([Var("acc"), Var("z")], allow_cur=False))})
    subject = c.prefix_sum(a, g, total=True)
    assert subject.facts.restartable is True
    x0, word, restarts = data.draw(restart_scenarios(subject, []))
    single, threads = restart_check(subject, x0, word, restarts)
    assert_same_outputs(single, threads)


def paper_counterexample() -> DT:
    """§5.2.2: on a, i' := i and f' := i' + cur — sums the input and the last a; not restartable."""
    i, ip = Var("i"), Var("i", primed=True)
    return DT(AB, ("i", "f"), ("i",), ("f",), (
        Transition("a", frozenset({i}), "i", i),
        Transition("a", frozenset({ip}), "f", Apply("add", (ip, Cur()))),
    ))


def test_the_restart_check_fails_on_the_papers_counterexample():
    single, threads = restart_check(paper_counterexample(), (1.0,), [("a", 2.0)], [(5.0,)])
    # Restarted in place: (⊤, ⊤); the threads (1, 1 + 2) and (5, ⊥) give 3.
    assert single == [(BOT,), (TOP,)]
    assert threads == [(BOT,), (3.0,)]


def test_combine_of_different_rates_is_not_restartable():
    """Theorem 5.6's hardness proof: (N1 ∥ N2) · G can be non-restartable although N1 and
    N2 are. Here N1 matches a, N2 matches aa; restarting after the first a pairs N1 of
    the second thread with N2 of the first. So components only combine equal rates."""
    a = c.identity_atom(AB, "a")
    both = c.parallel(a, c.concat(a, a))
    add = DataFunction.of(("p", "q"), {"r": Apply("add", (Var("p"), Var("q")))})
    d = c.concat(both, add)
    assert d.facts.restartable is None
    single, threads = restart_check(d, (1.0,), [("a", 0.0), ("a", 0.0)], [(2.0,), (BOT,)])
    assert single[-1] == (3.0,)
    assert threads[-1] == (BOT,)


@given(x0=data_values, word=words(AB, max_len=4), data=st.data())
@settings(max_examples=30)
def test_the_restart_check_finds_the_counterexample_by_search(x0, word, data):
    """The random runs of the restart test expose the paper's counterexample on every word
    with an a when all restarts are defined: at the first a, the in-place configuration
    has i' = (value kept by i or restarted) ⊔ (new restart) = ⊤, while only one thread
    (the one started just before, or x0) has a defined i."""
    d = paper_counterexample()
    assume(any(t == "a" for t, _ in word))
    restarts = [(data.draw(data_values),) for _ in word]
    single, threads = restart_check(d, (x0,), word, restarts)
    assert not all(same_vector(p, q) for p, q in zip(single, threads, strict=True))

