"""qre.language.automata against independent oracles (seed 003 §5.1 Theorem 5.2, §5.3.1 Figure 26).

Oracles: a naive recursive regex matcher on strings (every split for · and *),
enumeration of all words up to length 5 over 2–3 tags, direct simulation of
random DFAs, and the reference evaluator of DTs (dt.reference, Figure 25).
"""

from __future__ import annotations

import itertools
from functools import cache

import components
import pytest
from components import build, trees
from hypothesis import given
from hypothesis import strategies as st
from strategies import arbitrary_dts

from dt import constructions as c
from dt.reference import initial_config, outputs, step
from dt.terms import Cur
from dt.values import TOP, Status, status_of
from qre.language.automata import (
    DFA,
    Alt,
    And,
    Cat,
    Empty,
    Epsilon,
    Star,
    StateLimitError,
    Sym,
    all_strings,
    alt,
    any_tag,
    as_dfa,
    cat,
    complement,
    dt_language,
    equivalent,
    explain_difference,
    format_word,
    includes,
    intersect,
    is_empty,
    is_universal,
    minimize,
    parse_regex,
    product,
    shortest_difference,
    shortest_word,
    show,
    star,
    tags_of,
    to_dfa,
    to_regex,
    word,
)

MAX_LEN = 5
AB = ("a", "b")
a, b, cc = Sym("a"), Sym("b"), Sym("c")


# --------------------------------------------------------------------------- oracles


def all_words(alphabet, max_len=MAX_LEN):
    """Every word up to max_len, shortest first, then in alphabet order."""
    for n in range(max_len + 1):
        yield from itertools.product(alphabet, repeat=n)


def matcher(r):
    """A naive recursive matcher for r: tries every split for · and *."""

    @cache
    def m(node, w):
        match node:
            case Empty():
                return False
            case Epsilon():
                return w == ()
            case Sym(tag):
                return w == (tag,)
            case Alt(x, y):
                return m(x, w) or m(y, w)
            case And(x, y):
                return m(x, w) and m(y, w)
            case Cat(x, y):
                return any(m(x, w[:k]) and m(y, w[k:]) for k in range(len(w) + 1))
            case Star(x):
                # A nonempty first factor, then the star again.
                return w == () or any(m(x, w[:k]) and m(node, w[k:])
                                      for k in range(1, len(w) + 1))
        raise TypeError(node)

    return lambda w: m(r, tuple(w))


def brute_dfa_accepts(d: DFA, w) -> bool:
    s = d.start
    for t in w:
        s = d.delta[s][d.alphabet.index(t)]
    return s in d.accepting


# --------------------------------------------------------------------------- strategies

alphabets = st.sampled_from([("a", "b"), ("a", "b", "c")])


def regexes(alphabet, max_leaves=7):
    """Raw (unsimplified) regexes with ∅, ε, tags, |, ·, *, &."""
    leaf = st.one_of(st.just(Empty()), st.just(Epsilon()), st.sampled_from(alphabet).map(Sym))

    def extend(children):
        return st.one_of(
            st.builds(Alt, children, children),
            st.builds(Cat, children, children),
            st.builds(Star, children),
            st.builds(And, children, children),
        )

    return st.recursive(leaf, extend, max_leaves=max_leaves)


def smart_regexes(alphabet, max_leaves=7):
    """Regexes built with the smart constructors (what the typechecker builds)."""
    leaf = st.one_of(st.just(Empty()), st.just(Epsilon()), st.sampled_from(alphabet).map(Sym),
                     st.just(any_tag(alphabet)))

    def extend(children):
        return st.one_of(
            st.builds(alt, children, children),
            st.builds(cat, children, children),
            st.builds(star, children),
            st.builds(intersect, children, children),
        )

    return st.recursive(leaf, extend, max_leaves=max_leaves)


@st.composite
def with_alphabet(draw, make=regexes, count=1):
    alphabet = draw(alphabets)
    return (alphabet, *(draw(make(alphabet)) for _ in range(count)))


@st.composite
def random_dfas(draw, alphabet, max_states=6):
    n = draw(st.integers(1, max_states))
    delta = tuple(tuple(draw(st.integers(0, n - 1)) for _ in alphabet) for _ in range(n))
    accepting = frozenset(draw(st.sets(st.integers(0, n - 1))))
    return DFA(alphabet, delta, draw(st.integers(0, n - 1)), accepting)


@st.composite
def variant(draw, r):
    """A regex with the language of r, rewritten by algebraic laws at random nodes."""
    match r:
        case Alt(x, y):
            x, y = draw(variant(x)), draw(variant(y))
            return draw(st.sampled_from([Alt(x, y), Alt(y, x), Alt(Alt(x, y), x)]))
        case And(x, y):
            x, y = draw(variant(x)), draw(variant(y))
            return draw(st.sampled_from([And(x, y), And(y, x), And(x, And(y, x))]))
        case Cat(x, Alt(y, z)):
            x, y, z = draw(variant(x)), draw(variant(y)), draw(variant(z))
            return draw(st.sampled_from([Cat(x, Alt(y, z)), Alt(Cat(x, y), Cat(x, z))]))
        case Cat(x, y):
            x, y = draw(variant(x)), draw(variant(y))
            return draw(st.sampled_from([Cat(x, y), Cat(Cat(Epsilon(), x), y)]))
        case Star(x):
            x = draw(variant(x))
            return draw(st.sampled_from([Star(x), Star(Star(x)), Alt(Epsilon(), Cat(x, Star(x))),
                                         Star(Alt(Epsilon(), x))]))
    return draw(st.sampled_from([r, Alt(r, Empty()), Cat(Epsilon(), r)]))


# --------------------------------------------------------------------------- regex → DFA


@given(with_alphabet())
def test_to_dfa_agrees_with_the_naive_matcher(case):
    alphabet, r = case
    d = to_dfa(r, alphabet)
    m = matcher(r)
    for w in all_words(alphabet):
        assert d.accepts(w) == m(w), (show(r), w)


@given(with_alphabet(count=2))
def test_smart_constructors_keep_the_language(case):
    alphabet, x, y = case
    words = list(all_words(alphabet, 4))
    for smart, raw in [(alt(x, y), Alt(x, y)), (cat(x, y), Cat(x, y)), (star(x), Star(x)),
                       (intersect(x, y), And(x, y))]:
        ms, mr = matcher(smart), matcher(raw)
        assert all(ms(w) == mr(w) for w in words), (show(smart), show(raw))


def test_smart_constructors_simplify():
    assert cat(Empty(), a) == Empty() and cat(a, Empty()) == Empty()
    assert cat(Epsilon(), a) == a and cat(a, Epsilon()) == a and cat() == Epsilon()
    assert alt(a, Empty()) == a and alt(Empty(), a) == a and alt() == Empty()
    assert alt(a, a) == a and alt(a, alt(b, a)) == Alt(a, b)
    assert star(star(a)) == Star(a) and star(Epsilon()) == Epsilon()
    assert star(Empty()) == Epsilon() and star(alt(Epsilon(), a)) == Star(a)
    assert intersect(a, a) == a and intersect(a, Empty()) == Empty()
    assert word(["a", "b"]) == Cat(a, b) and word([]) == Epsilon()
    assert all_strings(AB) == Star(Alt(a, b)) and any_tag(["a"]) == a
    with pytest.raises(ValueError, match="identifier"):
        Sym("ε")
    with pytest.raises(ValueError, match="at least one"):
        intersect()


# --------------------------------------------------------------------------- DFAs


@given(st.data())
def test_minimize_keeps_the_language_never_grows_and_is_minimal(data):
    alphabet = data.draw(alphabets)
    d = data.draw(random_dfas(alphabet))
    m = minimize(d)
    assert m.n_states <= d.n_states
    for w in all_words(alphabet):
        assert brute_dfa_accepts(m, w) == brute_dfa_accepts(d, w)
    # Minimal: every state reachable, and no two states accept the same suffixes
    # (two states of an n-state DFA that differ do so on a word shorter than n).
    reach = {m.start}
    for w in all_words(alphabet, m.n_states):
        reach.add(m.state_after(w))
    assert reach == set(range(m.n_states))
    suffixes = list(all_words(alphabet, m.n_states - 1))
    rows = {tuple(DFA(alphabet, m.delta, s, m.accepting).accepts(w) for w in suffixes)
            for s in range(m.n_states)}
    assert len(rows) == m.n_states
    assert minimize(m) == m  # canonical


@given(with_alphabet(count=2))
def test_equal_languages_give_equal_minimal_dfas(case):
    alphabet, x, y = case
    dx, dy = to_dfa(x, alphabet), to_dfa(y, alphabet)
    assert (dx == dy) == (equivalent(dx, dy) is None)


@given(with_alphabet(count=2), st.sampled_from(["and", "or", "diff", "xor"]))
def test_product_and_complement(case, op):
    alphabet, x, y = case
    mx, my = matcher(x), matcher(y)
    expect = {"and": lambda p, q: p and q, "or": lambda p, q: p or q,
              "diff": lambda p, q: p and not q, "xor": lambda p, q: p != q}[op]
    d = product(x, y, op, alphabet=alphabet)
    nx = complement(x, alphabet)
    for w in all_words(alphabet, 4):
        assert d.accepts(w) == expect(mx(w), my(w))
        assert nx.accepts(w) != mx(w)


def test_alphabet_handling():
    d = to_dfa(cat(a, star(b)), AB)
    flipped = as_dfa(d, ("b", "a"))
    assert flipped.alphabet == ("b", "a") and flipped.accepts("abb") and not flipped.accepts("ba")
    assert equivalent(d, flipped) is None
    with pytest.raises(ValueError, match="not in the alphabet"):
        to_dfa(cc, AB)
    with pytest.raises(ValueError, match="alphabets differ"):
        as_dfa(d, ("a", "c"))
    with pytest.raises(ValueError, match="needs an alphabet"):
        as_dfa(a)
    with pytest.raises(ValueError, match="row 0"):
        DFA(AB, ((0,),), 0, frozenset())


# --------------------------------------------------------------------------- decisions


def _first_difference(mx, my, alphabet, max_len):
    return next((w for w in all_words(alphabet, max_len) if mx(w) != my(w)), None)


def _check_separating_word(x, y, alphabet):
    """equivalent() against enumeration: agreement, separation, shortest and least."""
    w = equivalent(x, y, alphabet)
    mx, my = matcher(x), matcher(y)
    first = _first_difference(mx, my, alphabet, MAX_LEN)
    if w is None:
        assert first is None, (show(x), show(y), first)
        return
    assert mx(w) != my(w), (show(x), show(y), w)
    # No shorter word separates; among words of its length it is the least in alphabet
    # order: the first separating word in the enumeration (shortest first) is w.
    assert first == (w if len(w) <= MAX_LEN else None), (show(x), show(y), w, first)


@given(with_alphabet(count=2))
def test_equivalent_on_random_pairs(case):
    _check_separating_word(*case[1:], case[0])


@given(st.data())
def test_equivalent_on_rewritten_regexes(data):
    alphabet, r = data.draw(with_alphabet())
    v = data.draw(variant(r))
    assert equivalent(r, v, alphabet) is None, (show(r), show(v))
    # ... and a perturbation is checked against enumeration, whatever it gives.
    _check_separating_word(r, alt(v, word(data.draw(st.lists(st.sampled_from(alphabet),
                                                              max_size=3)))), alphabet)


def test_algebraic_laws():
    laws = [
        (star(alt(a, b)), star(cat(star(a), star(b)))),
        (cat(a, star(cat(b, a))), cat(star(cat(a, b)), a)),
        (star(alt(a, b)), all_strings(AB)),
        (intersect(star(alt(a, b)), cat(a, all_strings(AB))), cat(a, all_strings(AB))),
        (star(star(a)), star(a)),
        (alt(Epsilon(), cat(a, star(a))), star(a)),
    ]
    for x, y in laws:
        assert equivalent(x, y, AB) is None, (show(x), show(y))
    assert equivalent(star(cat(a, b)), cat(star(a), star(b)), AB) == ("a",)
    assert equivalent(cat(star(a), b), cat(a, star(b)), AB) == ("a",)
    assert equivalent(cat(star(a), b), cat(star(a), b, star(b)), AB) == ("b", "b")
    assert equivalent(star(a), Epsilon(), AB) == ("a",)
    assert equivalent(cat(a, a, b), cat(a, a, a), AB) == ("a", "a", "a")
    assert explain_difference(star(a), star(alt(a, b)), AB, ("rate 1", "rate 2")) \
        == "b is in rate 2 only"
    assert explain_difference(a, a, AB) is None


@given(with_alphabet())
def test_emptiness_universality_shortest_word(case):
    alphabet, r = case
    m = matcher(r)
    members = [w for w in all_words(alphabet) if m(w)]
    w = shortest_word(r, alphabet)
    if members:
        assert w == members[0]
    else:
        assert w is None or (len(w) > MAX_LEN and m(w))
    assert is_empty(r, alphabet) == (w is None)
    universal = is_universal(r, alphabet)
    if universal:
        assert len(members) == sum(len(alphabet) ** n for n in range(MAX_LEN + 1))
    else:
        missing = shortest_word(complement(r, alphabet))
        assert missing is not None and not m(missing)


@given(with_alphabet(count=2))
def test_inclusion(case):
    alphabet, x, y = case
    mx, my = matcher(x), matcher(y)
    outside = next((w for w in all_words(alphabet) if my(w) and not mx(w)), None)
    w = shortest_difference(y, x, alphabet)
    assert includes(x, y, alphabet) == (w is None)
    if w is None:
        assert outside is None
    else:
        assert my(w) and not mx(w)
        assert outside is None or len(outside) >= len(w)


def test_degenerate_languages():
    assert shortest_word(Empty(), AB) is None and is_empty(Empty(), AB)
    assert shortest_word(Epsilon(), AB) == () and not is_universal(Epsilon(), AB)
    assert is_universal(all_strings(AB), AB) and is_universal(all_strings(()), ())
    assert shortest_word(cat(b, star(a), b), AB) == ("b", "b")
    assert shortest_word(alt(cat(b, a), cat(a, b)), AB) == ("a", "b")
    assert shortest_word(alt(cat(b, a), cat(a, b)), ("b", "a")) == ("b", "a")


# --------------------------------------------------------------------------- printing


def test_show_golden():
    abc = ("a", "b", "c")
    cases = [
        (Empty(), None, "∅"),
        (Epsilon(), None, "ε"),
        (a, None, "a"),
        (cat(a, b), None, "a·b"),
        (star(alt(a, b)), None, "(a|b)*"),
        (star(alt(a, b)), AB, "Σ*"),
        (star(alt(b, a)), AB, "Σ*"),
        (star(alt(a, b)), abc, "(a|b)*"),
        (intersect(a, b), None, "a & b"),
        (cat(a, all_strings(abc)), abc, "a·Σ*"),
        (alt(cat(a, b), cc), None, "a·b|c"),
        (cat(alt(a, b), cc), None, "(a|b)·c"),
        (intersect(alt(a, b), star(cat(a, b))), None, "a|b & (a·b)*"),
        (alt(intersect(a, b), cc), None, "(a & b)|c"),
        (cat(intersect(a, b), star(a)), None, "(a & b)·a*"),
        (Star(Star(a)), None, "(a*)*"),
        (Alt(a, Alt(b, cc)), None, "a|b|c"),
        (Cat(Cat(a, b), Cat(cc, a)), None, "a·b·c·a"),
        (star(cat(a, any_tag(abc))), abc, "(a·Σ)*"),
        (alt(Epsilon(), a), None, "ε|a"),
    ]
    for r, alphabet, text in cases:
        assert show(r, alphabet) == text, (repr(r), show(r, alphabet))
    assert str(star(alt(a, b))) == "(a|b)*"
    assert repr(star(a)) == "Star(Sym('a'))"
    assert format_word(()) == "ε" and format_word(("a", "b")) == "a·b"


@given(with_alphabet(make=smart_regexes))
def test_show_parses_back_to_the_same_language_and_text(case):
    alphabet, r = case
    text = show(r, alphabet)
    back = parse_regex(text, alphabet)
    assert equivalent(back, r, alphabet) is None, (text, show(back, alphabet))
    assert show(back, alphabet) == text


@given(with_alphabet())
def test_show_of_raw_regexes_is_unambiguous(case):
    alphabet, r = case
    assert equivalent(parse_regex(show(r, alphabet), alphabet), r, alphabet) is None


def test_parse_errors():
    assert parse_regex("a . (b|ε)*", AB) == cat(a, star(b))
    for text in ["a|", "(a", "a)", "Σ", "a+b"]:
        with pytest.raises(ValueError, match="regex"):
            parse_regex(text)


@given(st.data())
def test_to_regex_keeps_the_language(data):
    alphabet = data.draw(alphabets)
    d = data.draw(st.one_of(random_dfas(alphabet),
                            regexes(alphabet).map(lambda r: to_dfa(r, alphabet))))
    r = to_regex(d)
    assert equivalent(r, d) is None, show(r, alphabet)


def test_to_regex_golden():
    assert show(to_regex(all_strings(AB), AB), AB) == "Σ*"
    assert show(to_regex(cat(a, star(cat(b, a))), AB), AB) == "a·(b·a)*"
    assert to_regex(Empty(), AB) == Empty() and to_regex(Epsilon(), AB) == Epsilon()


# --------------------------------------------------------------------------- DT languages


def _reference_statuses(dt, x, alphabet):
    """Output statuses after every word up to MAX_LEN, by a DFS with dt.reference."""
    out = {}

    def walk(w, config):
        out[w] = tuple(status_of(v) for v in outputs(dt, config))
        if len(w) < MAX_LEN:
            for tag in alphabet:
                walk((*w, tag), step(dt, config, tag, 1.0))

    walk((), initial_config(dt, x))
    return out


@given(st.data())
def test_dt_language_agrees_with_the_reference_evaluator(data):
    alphabet = data.draw(st.sampled_from([("a",), ("a", "b"), ("a", "b", "c")]))
    dt = data.draw(arbitrary_dts(alphabet, max_states=4, max_transitions=7))
    defined, extended = dt_language(dt, "defined"), dt_language(dt, "extended")
    statuses = _reference_statuses(dt, (1.0,) * len(dt.initial), alphabet)
    for w, out in statuses.items():
        assert defined.accepts(w) == all(s == Status.DEFINED for s in out), (w, out)
        assert extended.accepts(w) == all(s != Status.UNDEFINED for s in out), (w, out)
    assert includes(extended, defined)  # L(A) ⊆ L̄(A), corollary of Theorem 5.2
    # L̄ does not depend on the choice of x in (D ∪ {⊤})^I.
    x = tuple(data.draw(st.sampled_from([TOP, 2.0])) for _ in dt.initial)
    for w, out in _reference_statuses(dt, x, alphabet).items():
        assert extended.accepts(w) == all(s != Status.UNDEFINED for s in out), (w, out)


@given(arbitrary_dts(("a", "b"), max_states=5))
def test_dt_language_state_limit(dt):
    full = dt_language(dt, minimal=False)
    assert dt_language(dt, max_states=full.n_states) == minimize(full)
    if full.n_states > 1:
        with pytest.raises(StateLimitError, match="reachable configurations"):
            dt_language(dt, max_states=full.n_states - 1)


def rate(tree):
    """The rate column of Figure 26 for a component tree of tests/components.py."""
    match tree:
        case components.Atom(tag, _) | components.IdAtom(tag):
            return Sym(tag)
        case components.Eps() | components.IdEps():
            return Epsilon()
        case components.Union(left, right):
            return alt(rate(left), rate(right))
        case components.Concat(left, right):
            return cat(rate(left), rate(right))
        case components.Combine(left, right, _):
            return intersect(rate(left), rate(right))
        case components.Iter(body):
            return star(rate(body))
    raise TypeError(tree)


@given(st.data())
def test_extended_language_of_constructions_is_the_rate_of_figure_26(data):
    alphabet = data.draw(st.sampled_from([("a", "b"), ("a", "b", "c")]))
    tree = data.draw(trees(alphabet, depth=3))
    lang = dt_language(build(tree, alphabet), "extended")
    assert equivalent(lang, rate(tree), alphabet) is None, (str(tree), show(rate(tree)))


def test_languages_of_constructions_golden():
    at = {t: c.atom(AB, t, Cur()) for t in AB}

    def text(dt, kind="extended"):
        return show(to_regex(dt_language(dt, kind)), AB)

    assert text(at["a"]) == "a" and text(at["a"], "defined") == "a"
    assert text(c.union(at["a"], at["b"])) == "Σ"
    assert text(c.concat(at["a"], at["b"])) == "a·b"
    assert text(c.iterate(at["a"])) == "a*"
    assert text(c.iterate(c.union(at["a"], at["b"]))) == "Σ*"
    # Both sides match a: the union is ⊤ there, in L̄ but not in L.
    both = c.union(at["a"], c.concat(at["a"], c.identity_epsilon(AB)))
    assert text(both) == "a" and text(both, "defined") == "∅"
    eps = c.epsilon(AB, c.INPUT)
    assert text(eps) == "ε"
    with pytest.raises(ValueError, match="kind"):
        dt_language(eps, "conflict")  # type: ignore[arg-type]


def test_long_chains_need_no_recursion():
    """Issue 19.15: a chain of lets doubling a split builds a rate with thousands of
    operands in a row; flattening, printing, the tags and the NFA must not recurse
    along it (they raised RecursionError past ~1,000)."""
    n = 2_000  # past the interpreter's recursion limit (1,000): a recursion would fail
    long_cat = cat(*(Sym("ab"[k % 2]) for k in range(n)))
    long_alt = alt(*(cat(Sym("a"), Sym("b"), *[Sym("a")] * k) for k in range(300)))
    assert isinstance(long_cat, Cat) and show(long_cat).count("·") == n - 1
    assert cat(long_cat, long_cat) == cat(*[Sym("ab"[k % 2]) for k in range(n)] * 2)
    assert tags_of(long_cat) == {"a", "b"} and tags_of(long_alt) == {"a", "b"}
    d = to_dfa(long_cat, ("a", "b"))
    assert d.accepts("ab" * (n // 2)) and not d.accepts("ab" * (n // 2 - 1))
    assert to_dfa(long_alt, ("a", "b")).accepts("ab" + "a" * 299)
