"""The combinator API (qre/language/combinators.py) builds the ASTs that the parser builds.

Every construct and sugar form of API.md "Query text" (seed 003 §5.3.1) is
built in code and compared with the parser's AST of the same text — the parser
is the independent expectation — then compiled and run against the compiled
text, and printed back. Random printable programs (tests/ast_strategies.py) are
rebuilt through the combinators from their parts, given as text or as objects.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from ast_strategies import programs
from hypothesis import given
from hypothesis import strategies as st

from dt.terms import Apply, Const, Cur, Term, Var
from qre import QreSyntaxError, qre
from qre.language import ast as A
from qre.language import combinators as q
from qre.language.clock import format_duration
from qre.language.parser import parse
from qre.language.printer import to_text

ALPHABET = ["a", "b"]
WORDS = [
    (["a", "a", "b", "a", "b", "a", "a"], [1.0, 2.0, -3.0, 4.0, 0.5, 2.0, 2.0]),
    (["a", "a", "a", "a"], [3.0, -1.0, 0.0, 7.5]),
]


def _last_or(c: float) -> A.Query:
    return q.fill_with(q.last("cur"), q.const(c))


# (text, builder): the builder spells the same query with the combinators, mixing the
# argument forms (TERM text, Term objects, numbers; symbols, lambda text, lam, BuiltinOp).
CASES: list[tuple[str, object]] = [
    ("iter(atom(a, cur), 0, +)",
     lambda: q.iter_(q.atom("a", "cur"), 0, "+")),
    ("split(or(atom(a, cur), eps(0)), atom(b, cur * 2), (x, y) -> x - y)",
     lambda: q.split(q.or_(q.atom("a", Cur()), q.eps(0)),
                     q.atom("b", Apply("mul", (Cur(), Const(2.0)))), "(x, y) -> x - y")),
    ("iter(or(atom(a, cur), atom(b, -cur)), inf, min)",
     lambda: q.iter_(q.or_(q.atom("a", "cur"), q.atom("b", "-cur")), math.inf,
                     A.BuiltinOp("min"))),
    ("combine(iter(atom(_, cur), 0, +), iter(atom(_, 1), 0, +), (s, n) -> s / n)",
     lambda: q.combine(q.iter_(q.atom("_", "cur"), 0, "+"), q.iter_(q.atom("_", 1), 0.0, "+"),
                       op=q.lam(("s", "n"), "s / n"))),
    ("prefix_sum(iter(or(atom(a, cur), atom(b, 0)), 0, +), -inf, max)",
     lambda: q.prefix_sum(q.iter_(q.or_(q.atom("a", "cur"), q.atom("b", 0)), 0, "+"),
                          float("-inf"), "max")),
    ("fill(split(any_word(), atom(a, cur), snd))",
     lambda: q.fill(q.split(q.any_word(), q.atom("a", "cur"), "snd"))),
    ("fill_with(last(cur), const(-1))",
     lambda: _last_or(-1)),
    ("count() < const(3)",
     lambda: q.lt(q.count(), q.const(3))),
    ("sum(cur) <= count()",
     lambda: q.le(q.sum_("cur"), q.count())),
    ("avg(cur) > const(1) && var(cur) >= const(0) && !(std(cur) == const(0))",
     lambda: q.land(q.gt(q.avg("cur"), q.const(1)), q.ge(q.var(Cur()), q.const(0)),
                    q.lnot(q.eq(q.std("cur"), q.const(0))))),
    ("count() < const(2) || sum(cur) > const(5)",
     lambda: q.lor(q.lt(q.count(), q.const(2)), q.gt(q.sum_("cur"), q.const(5)))),
    ("count() > const(2) -> sum(cur) > const(0)",
     lambda: q.implies(q.gt(q.count(), q.const(2)), q.gt(q.sum_("cur"), q.const(0)))),
    ("(count() > const(2)) <-> (sum(cur) > const(0))",
     lambda: q.iff(q.gt(q.count(), q.const(2)), q.gt(q.sum_("cur"), q.const(0)))),
    ("prev(count() > const(1))",
     lambda: q.prev(q.gt(q.count(), q.const(1)))),
    ("hist(sum(cur) >= const(0))",
     lambda: q.hist(q.ge(q.sum_("cur"), q.const(0)))),
    ("once(fill_with(last(cur), const(0)) > const(3))",
     lambda: q.once(q.gt(_last_or(0), q.const(3)))),
    ("fill_with(last(cur), const(0)) > const(0) since count() == const(2)",
     lambda: q.since(q.gt(_last_or(0), q.const(0)), q.eq(q.count(), q.const(2)))),
    ("fill_with(last(cur), const(0)) > const(0) wsince count() == const(2)",
     lambda: q.wsince(q.gt(_last_or(0), q.const(0)), q.eq(q.count(), q.const(2)))),
    ("iter(any(cur), 1, *)",
     lambda: q.iter_(q.any_("cur"), True, "*")),
    ("fill_with(window(3, cur, max), const(0))",
     lambda: q.fill_with(q.window(3, "cur", "max"), q.const(0))),
    ("fill_with(window(2, cur, (x, y) -> x + y), avg_last(1, cur))",
     lambda: q.fill_with(q.window(2.0, Cur(), "(x, y) -> x + y"), q.avg_last(1, "cur"))),
    ("fill_with(avg_last(2, cur), const(0))",
     lambda: q.fill_with(q.avg_last(2, "cur"), q.const(0.0))),
    ("combine(count(), (n) -> n * 2)",
     lambda: q.combine(q.count(), op="(n) -> n * 2")),
    ("split(atom(a, cur), atom(_, cur), fst)",
     lambda: q.split(q.atom("a", "cur"), q.atom("_", "cur"), "fst")),
    ("or(eps(-2.5), atom(b, cur))",
     lambda: q.or_(q.eps("-2.5"), q.atom("b", "cur"))),
    ("iter(atom(a, cur), nan, fst)",
     lambda: q.iter_(q.atom("a", "cur"), math.nan, "fst")),
    ("fold([0, -inf], (n, m) -> [n + 1, max(m, cur)], (n, m) -> m / n)",
     lambda: q.fold(["n", "m"], [0, -math.inf], ["n + 1", Apply("max", (Var("m"), Cur()))],
                    "m / n")),
    ("max(cur - 1) > min(cur * 2) || avg(cur) <= -2.5",
     lambda: q.lor(q.gt(q.max_("cur - 1"), q.min_("cur * 2")), q.le(q.avg("cur"), -2.5))),
    ("fill_with(last(cur), 0) > 3 && combine(count(), 2, *) == inf",
     lambda: q.land(q.gt(q.fill_with(q.last("cur"), 0), 3),
                    q.eq(q.combine(q.count(), 2, op="*"), math.inf))),
]

PROGRAM_TEXT = "alphabet a, b;\nlet s = sum(cur);\nlet n = count();\ns > n"


def _program() -> A.Program:
    return q.program(q.gt(q.ref("s"), q.ref("n")),
                     lets=[q.let("s", q.sum_("cur")), ("n", q.count())], alphabet=["a", "b"])


def _outputs(monitor) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(out.status, out.value) for out in (monitor.run(t, v) for t, v in WORDS)]


def _assert_same_runs(built, text: str, alphabet=None) -> None:
    expected = _outputs(qre(text, alphabet=alphabet))
    got = _outputs(qre(built, alphabet=alphabet))
    for (s1, v1), (s2, v2) in zip(got, expected, strict=True):
        np.testing.assert_array_equal(s1, s2)
        np.testing.assert_array_equal(v1, v2)  # NaN-safe: NaN equals NaN here


IDS = [text for text, _ in CASES]


def test_every_construct_and_sugar_form_is_covered():
    """The table mentions every construct and sugar form of the text syntax."""
    texts = " ".join(IDS) + PROGRAM_TEXT
    words = ["atom", "eps", "or(", "split", "iter", "combine", "prefix_sum", "fill(",
             "fill_with", "<", "<=", ">", ">=", "==", "&&", "||", "!", "->", "<->", "prev",
             "hist", "once", " since ", "wsince", "let", "alphabet", "any(", "any_word",
             "const", "count", "sum(", "avg(", "var(", "std(", "last(", "window", "avg_last",
             "fold(", "max(", "min(", "2.5", "inf"]
    assert [w for w in words if w not in texts] == []


@pytest.mark.parametrize(("text", "build"), CASES, ids=IDS)
def test_builds_the_parsed_ast(text, build):
    assert build() == parse(text).query


@pytest.mark.parametrize(("text", "build"), CASES, ids=IDS)
def test_runs_like_the_text(text, build):
    _assert_same_runs(build(), text, ALPHABET)


@pytest.mark.parametrize(("text", "build"), CASES, ids=IDS)
def test_prints_back_to_an_equal_ast(text, build):
    built = build()
    assert parse(to_text(built)).query == built


def test_program_with_lets_and_alphabet():
    built = _program()
    assert built == parse(PROGRAM_TEXT)
    assert parse(to_text(built)) == built
    assert to_text(built) == PROGRAM_TEXT.replace("sum(cur)", "iter(atom(_, cur), 0, +)").replace(
        "count()", "iter(atom(_, 1), 0, +)")
    _assert_same_runs(built, PROGRAM_TEXT)
    # lets as a mapping; alphabet from the qre call instead
    mapped = q.program(q.gt(q.ref("s"), q.ref("n")), lets={"s": q.sum_("cur"), "n": q.count()})
    assert mapped == parse(PROGRAM_TEXT.split("\n", 1)[1])
    _assert_same_runs(mapped, PROGRAM_TEXT, ALPHABET)


def test_argument_forms_agree():
    """A term as text, as a Term and as a number; an operation in every spelling."""
    term = Apply("add", (Cur("x"), Const(1.0)))
    assert q.atom("a", "cur.x + 1") == q.atom("a", term) == A.Atom("a", term)
    assert q.eps(3) == q.eps(3.0) == q.eps("3") == q.eps(Const(3.0)) == A.Eps(Const(3.0))
    assert q.eps(True) == q.eps("true")
    body = Apply("max", (Var("x"), Apply("neg", (Var("y"),))))
    spellings = ["(x, y) -> max(x, -y)", " ( x ,y )->max(x,-y) ", "(x,\n y) ->\n max(x, -y)",
                 q.lam(("x", "y"), "max(x, -y)"), q.lam(["x", "y"], body),
                 A.Lambda(("x", "y"), body)]
    ops = {q.split(q.eps(0), q.eps(1), s).op for s in spellings}
    assert ops == {A.Lambda(("x", "y"), body)}
    assert q.iter_(q.eps(0), 0, " + ").op == A.BuiltinOp("+")
    assert q.iter_(q.eps(0), -0.0, "+").init == -0.0
    assert math.copysign(1.0, q.iter_(q.eps(0), -0.0, "+").init) == -1.0


def test_chains_nest_as_the_text_reads():
    p = [q.gt(q.count(), q.const(i)) for i in range(4)]
    assert q.land(*p) == parse(" && ".join(f"count() > const({i})" for i in range(4))).query
    assert q.lor(*p[:3]) == parse(" || ".join(f"count() > const({i})" for i in range(3))).query
    nested = q.implies(p[0], q.implies(p[1], p[2]))
    assert nested == parse("count() > const(0) -> count() > const(1) -> count() > const(2)").query


def test_queries_are_type_checked_by_qre():
    """Typing stays with qre.language.typing: a combine of unequal rates builds, then fails."""
    bad = q.combine(q.atom("a", "cur"), q.split(q.atom("a", "cur"), q.atom("b", "cur"), "+"),
                    op="+")
    with pytest.raises(ValueError, match="combine needs equal rates"):
        qre(bad)
    with pytest.raises(ValueError, match="the lambda takes 1"):  # arity: typing
        qre(q.iter_(q.atom("a", "cur"), 0, "(x) -> x"))


BAD = [
    # terms
    (lambda: q.atom("a", "cur +"), r"atom: unexpected end of term;.* at line 1, column 6"),
    (lambda: q.atom("a", "x + 1"), r"atom: unknown variable 'x'.*only cur"),
    (lambda: q.atom("a", [1]), r"atom: a term must be a Term, TERM text or a number, not list"),
    (lambda: q.eps("cur"), r"eps: eps takes a constant term"),
    (lambda: q.eps(Var("y")), r"eps: unknown variable 'y'"),
    (lambda: q.sum_("z"), r"sum_: unknown variable 'z': a term argument"),
    # tags and names
    (lambda: q.atom("a-b", "cur"), r"atom: tag 'a-b' is not an identifier"),
    (lambda: q.atom("iter", "cur"), r"atom: tag 'iter' is a keyword"),
    (lambda: q.atom(3, "cur"), r"atom: tag must be a str, not int"),
    (lambda: q.ref("cur"), r"ref: name 'cur' is a keyword"),
    (lambda: q.ref("é"), r"ref: name 'é' is not an identifier"),
    # queries
    (lambda: q.or_("atom(a, cur)", q.eps(0)), r"or_: q1 must be a query, not str.*parse"),
    (lambda: q.gt(q.count(), True), r"gt: q2 must be a query, not bool True; .*const\(1\)"),
    (lambda: q.fill(A.BuiltinOp("+")), r"fill: q must be a query.*operation cannot stand"),
    (lambda: q.combine(op="+"), r"combine: needs at least one query"),
    (lambda: q.combine(q.count(), "+", op="+"), r"combine: argument 2 must be a query"),
    (lambda: q.land(q.count()), r"land: needs at least two queries, got 1"),
    # operations
    (lambda: q.split(q.eps(0), q.eps(0), "avg"), r"split: unknown operation 'avg'"),
    (lambda: q.split(q.eps(0), q.eps(0), 3), r"split: an operation must be .*not int"),
    (lambda: q.iter_(q.eps(0), 0, "x -> x"), r"iter_: 'x -> x' is not an operation.*parenth"),
    (lambda: q.iter_(q.eps(0), 0, "(x, y) -> x +"),
     r"iter_: unexpected end of term;.* at line 1, column 14"),
    (lambda: q.iter_(q.eps(0), 0, "(x,\n y) -> x + * y"),
     r"iter_: unexpected '\*'.* at line 2, column 12"),
    (lambda: q.iter_(q.eps(0), 0, "(x, y) -> x + cur"), r"iter_: a lambda .* not cur"),
    (lambda: q.iter_(q.eps(0), 0, "(x, y) -> x + z"),
     r"unknown variable 'z': this lambda's parameters are x, y"),
    (lambda: q.iter_(q.eps(0), 0, "(x, y) -> x' + y"),
     r"iter_: \"x'\": lambda parameters are not primed"),
    (lambda: q.iter_(q.eps(0), 0, "(x, x) -> x"), r"lambda parameter 'x' is repeated"),
    (lambda: q.iter_(q.eps(0), 0, "() -> 1"), r"at least one parameter"),
    (lambda: q.iter_(q.eps(0), 0, "(x, 2) -> x"), r"lambda parameter '2' is not an identifier"),
    (lambda: q.iter_(q.eps(0), 0, "(x, inf) -> x"), r"lambda parameter 'inf' is a keyword"),
    (lambda: q.lam("x", "x"), r"lam: parameters are a sequence of names"),
    (lambda: q.lam(("x",), "cur"), r"lam: a lambda combines"),
    (lambda: q.iter_(q.eps(0), 0, A.Lambda(("x", "y"), Cur())), r"iter_: .*not cur"),
    # running folds
    (lambda: q.fold(["s"], [0, 1], ["s"], "s"), r"fold: one initial value and one update"),
    (lambda: q.fold(["s"], [0], ["z + cur"], "s"),
     r"fold: unknown variable 'z': a fold's update reads its registers \(s\) and cur"),
    (lambda: q.fold(["s"], [0], ["s"], "s + cur"), r"fold: .*not cur"),
    (lambda: q.fold(["s", "s"], [0, 0], ["s", "s"], "s"), r"parameter 's' is repeated"),
    (lambda: q.fold(["s"], 0, ["s"], "s"), r"fold: init is a sequence"),
    # numbers
    (lambda: q.iter_(q.eps(0), "0", "+"), r"iter_: init must be a number"),
    (lambda: q.const(None), r"const: c must be a number"),
    (lambda: q.window(0, "cur", "+"), r"window: k must be a positive integer, not 0"),
    (lambda: q.avg_last(2.5, "cur"), r"avg_last: k must be a positive integer, not 2.5"),
    (lambda: q.avg_last(math.inf, "cur"), r"avg_last: k must be a positive integer"),
    (lambda: q.window(101, "cur", "*"), r"more than 100 events takes op \+, min or max"),
    # programs
    (lambda: q.program(q.ref("s")), r"program: the query refers to 's', which no earlier let"),
    (lambda: q.program(q.count(), lets=[("s", q.ref("s"))]), r"let of 's' refers to 's'"),
    (lambda: q.program(q.count(), lets=[("s", q.count()), q.let("s", q.count())]),
     r"'s' is bound twice"),
    (lambda: q.program(q.count(), lets=[q.count()]), r"a let is let\(name, q\)"),
    (lambda: q.program(q.count(), lets="s"), r"lets must be a mapping"),
    (lambda: q.program(q.count(), alphabet="ab"), r"alphabet is a sequence of tags"),
    (lambda: q.program(q.count(), alphabet=["a", "_"]), r"'_' is the wildcard tag"),
    (lambda: q.program(q.count(), alphabet=["a", "a"]), r"tag 'a' is declared twice"),
    (lambda: q.program(q.count(), alphabet=[]), r"at least one tag"),
    (lambda: q.program("count()"), r"program: query must be a query"),
]


@pytest.mark.parametrize(("call", "message"), BAD, ids=[m for _, m in BAD])
def test_bad_arguments_raise_clear_errors(call, message):
    with pytest.raises(QreSyntaxError, match=message) as info:
        call()
    assert isinstance(info.value, ValueError)


def test_text_errors_show_a_caret():
    with pytest.raises(QreSyntaxError) as info:
        q.iter_(q.eps(0), 0, "(x,\n y) -> x + * y")
    assert (info.value.line, info.value.column) == (2, 12)
    assert str(info.value).endswith("   y) -> x + * y\n             ^")


# --------------------------------------------------------------------------- random programs


def _term_arg(t: Term, draw) -> object:
    """``t`` as a combinator argument: the Term itself or its text (or a number)."""
    form = draw(st.sampled_from(["term", "text"]))
    if isinstance(t, Const) and draw(st.booleans()):
        return t.value
    return t if form == "term" else str(t)


def _bound_arg(bound: A.PastBound, draw) -> tuple:
    """``bound`` as the pair a combinator takes: counts, or durations as text (a 0 start
    sometimes a bare 0; an open end sometimes None)."""
    if bound.events:
        return (bound.lo, bound.hi)
    bare = bound.lo == 0 and bound.hi is not None and draw(st.booleans())  # hi tells time
    lo = 0 if bare else format_duration(bound.lo)
    return (lo, None if bound.hi is None else format_duration(bound.hi))


def _op_arg(op: A.Op, draw) -> object:
    if isinstance(op, A.BuiltinOp):
        return draw(st.sampled_from([op, op.symbol]))
    return draw(st.sampled_from([op, to_text(op), q.lam(op.params, str(op.body))]))


_UNARY = {A.Fill: q.fill, A.Not: q.lnot, A.Prev: q.prev, A.Hist: q.hist, A.Once: q.once}
_BINARY = {A.Or: q.or_, A.FillWith: q.fill_with}
_COMPARE = {"<": q.lt, "<=": q.le, ">": q.gt, ">=": q.ge, "==": q.eq}
_ARITH = {"+": q.add, "-": q.sub, "*": q.mul, "/": q.div}
_CONNECT = {"&&": q.land, "||": q.lor, "->": q.implies, "<->": q.iff}


def _rebuild(node: A.Query, draw) -> A.Query:
    """``node`` rebuilt through the combinators (an independent walk over the AST)."""
    r = lambda child: _rebuild(child, draw)  # noqa: E731
    match node:
        case A.Atom(tag, term):
            return q.atom(tag, _term_arg(term, draw))
        case A.Eps(term):
            return q.eps(_term_arg(term, draw))
        case A.Split(left, right, op):
            return q.split(r(left), r(right), _op_arg(op, draw))
        case A.Iter(body, init, op):
            return q.iter_(r(body), init, _op_arg(op, draw))
        case A.PrefixSum(body, init, op):
            return q.prefix_sum(r(body), init, _op_arg(op, draw))
        case A.Combine(args, op):
            return q.combine(*map(r, args), op=_op_arg(op, draw))
        case A.RunningFold(registers, init, update, output):
            return q.fold(registers, init, [_term_arg(u, draw) for u in update],
                          _term_arg(output, draw))
        case A.Compare(op, left, right):
            return _COMPARE[op](r(left), r(right))
        case A.Arith(op, left, right):
            return _ARITH[op](r(left), r(right))
        case A.BoolOp(op, left, right):
            return _CONNECT[op](r(left), r(right))
        case A.Since(left, right, strong):
            return (q.since if strong else q.wsince)(r(left), r(right))
        case A.SignalFunction(name, args):
            return q.signal(name, *map(r, args))
        case A.BoundedPast(op, operands, bound):
            return getattr(q, op)(*map(r, operands), bound=_bound_arg(bound, draw))
        case A.Name(name):
            return q.ref(name)
    if type(node) in _UNARY:
        return _UNARY[type(node)](r(node.body))
    return _BINARY[type(node)](r(node.left if isinstance(node, A.Or) else node.body),
                               r(node.right if isinstance(node, A.Or) else node.default))


@given(programs(max_leaves=8), st.data())
def test_random_programs_rebuild_equal(program, data):
    """Every printable program — odd names, special floats, every term operation —
    rebuilds through the combinators, from objects or from text, to an equal AST."""
    lets = [(let.name, _rebuild(let.query, data.draw)) for let in program.lets]
    if data.draw(st.booleans()):
        lets = [q.let(n, x) for n, x in lets]
    built = q.program(_rebuild(program.query, data.draw), lets=lets, alphabet=program.alphabet)
    assert built == program
    assert parse(to_text(built)) == program


def test_module_docstring_lists_every_public_function():
    doc = q.__doc__ or ""
    missing = [n for n in q.__all__ if not re.search(rf"``{n}\(", doc)]
    assert missing == []
