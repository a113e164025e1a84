"""Random restartable components 1 ⇉ 1 built with the constructions of §5.2 (seed 003).

A component is described by a small expression tree (:data:`Tree`) and built
with :func:`build`. Every node is a construction that Theorem 5.5 proves
restartable, so every built component must be restartable and output-
synchronized (one final state):

* leaves: ``atom(σ, t)``, ``eps(t)``, ``I_atom(σ)``, ``I_eps`` (§5.3.2);
* ``A ⊔ B`` and ``A · B`` (A has one output, so it is output-synchronized);
* ``combine(A, B, G) = (A ∥ B) · G`` with G a binary data function. A ∥ B is
  output-synchronized, hence the result restartable, only if A and B have the
  same rate (L̄(A) = L̄(B)); the paper's PSPACE-hardness proof (Theorem 5.6)
  uses exactly a combine of two restartable DTs of different rates that is
  *not* restartable. So B is A itself, A with fresh terms (the rate of a tree
  depends on its shape only: every transition is strict in its sources
  whatever its term reads), or the identity of A's shape (``I_A`` of §5.3.2,
  which gives ``A · ((I_B ∥ B) · G)``, the paper's split);
* ``A*`` with a body that is ⊥ on the empty word (the paper: otherwise A* is ⊤).

:func:`nullable` says structurally whether a tree produces output on the
empty word (for a defined input); the tests check it against the reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st
from strategies import data_values, terms, words

from dt import constructions as c
from dt.functions import DataFunction
from dt.model import DT
from dt.terms import Term, Var

__all__ = [
    "Atom",
    "Combine",
    "Component",
    "Concat",
    "Eps",
    "IdAtom",
    "IdEps",
    "Iter",
    "Tree",
    "Union",
    "X",
    "build",
    "combiner",
    "components",
    "identity_of",
    "matching_tags",
    "nullable",
    "same_rate_trees",
    "total_trees",
    "trees",
    "words_for",
]

X = Var("x")
"""The input variable of atom and epsilon terms."""


@dataclass(frozen=True)
class Atom:
    tag: str
    term: Term

    def __str__(self) -> str:
        return f"atom({self.tag}, {self.term})"


@dataclass(frozen=True)
class Eps:
    term: Term

    def __str__(self) -> str:
        return f"eps({self.term})"


@dataclass(frozen=True)
class IdAtom:
    tag: str

    def __str__(self) -> str:
        return f"I_atom({self.tag})"


@dataclass(frozen=True)
class IdEps:
    def __str__(self) -> str:
        return "I_eps"


@dataclass(frozen=True)
class Union:
    left: Tree
    right: Tree

    def __str__(self) -> str:
        return f"({self.left} ⊔ {self.right})"


@dataclass(frozen=True)
class Concat:
    left: Tree
    right: Tree

    def __str__(self) -> str:
        return f"({self.left} · {self.right})"


@dataclass(frozen=True)
class Combine:
    """(left ∥ right) · G with L̄(left) = L̄(right) and G : (p, q) ⇒ r."""

    left: Tree
    right: Tree
    g: Term

    def __str__(self) -> str:
        return f"combine({self.left}, {self.right}, (p, q) -> {self.g})"


@dataclass(frozen=True)
class Iter:
    body: Tree

    def __str__(self) -> str:
        return f"({self.body})*"


Tree = Atom | Eps | IdAtom | IdEps | Union | Concat | Combine | Iter


def combiner(term: Term) -> DataFunction:
    """G : (p, q) ⇒ r given by one term strict in both inputs (the paper's G_op)."""
    return DataFunction.of(("p", "q"), {"r": term})


def build(tree: Tree, alphabet: tuple[str, ...]) -> DT:
    """The DT of a tree, built with :mod:`dt.constructions`."""
    match tree:
        case Atom(tag, term):
            return c.atom(alphabet, tag, term)
        case Eps(term):
            return c.epsilon(alphabet, term)
        case IdAtom(tag):
            return c.identity_atom(alphabet, tag)
        case IdEps():
            return c.identity_epsilon(alphabet)
        case Union(left, right):
            return c.union(build(left, alphabet), build(right, alphabet))
        case Concat(left, right):
            return c.concat(build(left, alphabet), build(right, alphabet))
        case Combine(left, right, g):
            both = c.parallel(build(left, alphabet), build(right, alphabet), same_rate=True)
            return c.concat(both, combiner(g))
        case Iter(body):
            return c.iterate(build(body, alphabet))
    raise TypeError(f"not a component tree: {tree!r}")


def nullable(tree: Tree) -> bool:
    """True if the tree's output on the empty word is non-⊥ for a defined input."""
    match tree:
        case Atom() | IdAtom():
            return False
        case Eps() | IdEps() | Iter():
            return True
        case Union(left, right):
            return nullable(left) or nullable(right)
        case Concat(left, right):
            return nullable(left) and nullable(right)
        case Combine(left, _, _):
            return nullable(left)
    raise TypeError(f"not a component tree: {tree!r}")


def identity_of(tree: Tree) -> Tree:
    """I_A (§5.3.2): the same rate as ``tree``, returning its input unchanged where defined."""
    match tree:
        case Atom(tag, _) | IdAtom(tag):
            return IdAtom(tag)
        case Eps() | IdEps():
            return IdEps()
        case Union(left, right):
            return Union(identity_of(left), identity_of(right))
        case Concat(left, right):
            return Concat(identity_of(left), identity_of(right))
        case Combine(left, _, _):
            return identity_of(left)
        case Iter(body):
            return Iter(identity_of(body))
    raise TypeError(f"not a component tree: {tree!r}")


def _atom_terms():
    return terms([X], allow_cur=True, max_leaves=3)


def _eps_terms():
    return terms([X], allow_cur=False, max_leaves=3)


def _combine_terms():
    return terms([Var("p"), Var("q")], allow_cur=False, max_leaves=3)


@st.composite
def _same_shape(draw, tree: Tree) -> Tree:
    """``tree`` with fresh terms: same shape, hence the same rate."""
    match tree:
        case Atom(tag, _):
            return Atom(tag, draw(_atom_terms()))
        case Eps(_):
            return Eps(draw(_eps_terms()))
        case IdAtom() | IdEps():
            return tree
        case Union(left, right):
            return Union(draw(_same_shape(left)), draw(_same_shape(right)))
        case Concat(left, right):
            return Concat(draw(_same_shape(left)), draw(_same_shape(right)))
        case Combine(left, right, _):
            return Combine(draw(_same_shape(left)), draw(_same_shape(right)),
                           draw(_combine_terms()))
        case Iter(body):
            return Iter(draw(_same_shape(body)))
    raise TypeError(f"not a component tree: {tree!r}")


def same_rate_trees(tree: Tree):
    """Trees with the rate of ``tree``: itself, its shape with fresh terms, its identity."""
    return st.one_of(st.just(tree), _same_shape(tree), st.just(identity_of(tree)))


@st.composite
def trees(draw, alphabet: tuple[str, ...], depth: int = 3, nonempty: bool = False) -> Tree:
    """Random component trees of height ≤ ``depth``; ``nonempty``: ⊥ on the empty word."""
    kinds = ["atom", "id_atom"]
    if not nonempty:
        kinds += ["eps", "id_eps"]
    if depth > 0:
        kinds += ["union", "concat", "combine"]
        if not nonempty:
            kinds.append("iter")
    kind = draw(st.sampled_from(kinds))
    tags = st.sampled_from(alphabet)
    sub = depth - 1
    if kind == "atom":
        return Atom(draw(tags), draw(_atom_terms()))
    if kind == "id_atom":
        return IdAtom(draw(tags))
    if kind == "eps":
        return Eps(draw(_eps_terms()))
    if kind == "id_eps":
        return IdEps()
    if kind == "union":
        return Union(draw(trees(alphabet, sub, nonempty)), draw(trees(alphabet, sub, nonempty)))
    if kind == "concat":
        # Non-nullable if either side is.
        left_nonempty = nonempty and draw(st.booleans())
        right_nonempty = nonempty and not left_nonempty
        return Concat(draw(trees(alphabet, sub, left_nonempty)),
                      draw(trees(alphabet, sub, right_nonempty)))
    if kind == "combine":
        left = draw(trees(alphabet, sub, nonempty))
        return Combine(left, draw(same_rate_trees(left)), draw(_combine_terms()))
    assert kind == "iter"
    return Iter(draw(trees(alphabet, sub, nonempty=True)))


@st.composite
def total_trees(draw, alphabet: tuple[str, ...]) -> Tree:
    """(⊔_σ atom(σ, t_σ))*: every word has exactly one factorization, so L̄ = Σ*.

    Defined on every word for a defined input: the components that prefix sum
    needs for restartability (Theorem 5.5), and a source of defined outputs.
    """
    body: Tree = Atom(alphabet[0], draw(_atom_terms()))
    for tag in alphabet[1:]:
        body = Union(body, Atom(tag, draw(_atom_terms())))
    return Iter(body)


@dataclass(frozen=True)
class Component:
    """A tree and its DT; shown as the tree in hypothesis reports."""

    tree: Tree
    dt: DT = field(repr=False, compare=False)

    def __repr__(self) -> str:
        return f"Component({self.tree})"


def components(alphabet: tuple[str, ...], depth: int = 3, nonempty: bool = False):
    """Restartable, output-synchronized components 1 ⇉ 1 over ``alphabet``."""
    return trees(alphabet, depth, nonempty).map(lambda t: Component(t, build(t, alphabet)))


@st.composite
def matching_tags(draw, tree: Tree, max_reps: int = 3) -> list[str]:
    """A tag string in the tree's rate (``Iter`` repeats its body 0..max_reps times).

    Random words over 2–3 tags rarely match a component, so tests draw words
    in the rate of their components too, to reach defined outputs.
    """
    match tree:
        case Atom(tag, _) | IdAtom(tag):
            return [tag]
        case Eps() | IdEps():
            return []
        case Union(left, right):
            return draw(matching_tags(draw(st.sampled_from([left, right])), max_reps))
        case Concat(left, right):
            return draw(matching_tags(left, max_reps)) + draw(matching_tags(right, max_reps))
        case Combine(left, _, _):
            return draw(matching_tags(left, max_reps))
        case Iter(body):
            reps = draw(st.integers(0, max_reps))
            return [t for _ in range(reps) for t in draw(matching_tags(body, max_reps))]
    raise TypeError(f"not a component tree: {tree!r}")


@st.composite
def tagged(draw, tags: list[str], alphabet: tuple[str, ...], max_len: int = 7):
    """A data word from a tag string, with a random suffix, cut to ``max_len`` events."""
    tags = tags + draw(st.lists(st.sampled_from(alphabet), max_size=2))
    return [(t, draw(data_values)) for t in tags[:max_len]]


def words_for(trees_: list[Tree], alphabet: tuple[str, ...], max_len: int = 7):
    """Random words, and words in the rate of the concatenation of ``trees_`` (plus a suffix)."""
    def matching(draw_tags):
        return draw_tags.flatmap(lambda tags: tagged(tags, alphabet, max_len))

    concatenated = st.tuples(*[matching_tags(t) for t in trees_]).map(
        lambda parts: [t for part in parts for t in part])
    return st.one_of(matching(concatenated), matching(concatenated), words(alphabet, max_len))
