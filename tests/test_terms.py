"""Terms Tm[X ∪ {cur}] (seed 003, §5.1) and their TERM syntax (docs/API.md).

Checked here: the printer/parser round trip over random terms of every
operation of :data:`dt.terms.OPS`; precedence and associativity; the IEEE 754
semantics that the module docstring of :mod:`dt.terms` documents, against
Python's own float arithmetic as an independent oracle; ``size`` (node count),
``variables``, ``fields``, ``reads_cur``; syntax errors with their location and
caret; evaluation errors on events that lack what a term reads; and a fuzz
property: arbitrary text either parses or raises :class:`TermSyntaxError`.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import operator

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from util import same

from dt.errors import EvaluationError, TermSyntaxError
from dt.terms import KEYWORDS, OPS, Apply, Const, Cur, Term, Var, evaluate_term, parse_term

# --------------------------------------------------------------------------- strategies

# Identifiers, with some that look like function names or keywords on purpose: a
# variable may be called ``min`` or ``curx`` (only a call needs parentheses).
_identifiers = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,5}", fullmatch=True),
    st.sampled_from(["min", "if", "pow", "curx", "cur_", "true1", "infinity", "nan2", "e5", "E"]),
)
var_names = _identifiers.filter(lambda n: n not in KEYWORDS)
# A record field may be any identifier, keywords included (``cur.true`` is unambiguous).
field_names = st.one_of(_identifiers, st.sampled_from(sorted(KEYWORDS)))

SPECIAL_FLOATS = [
    0.0, -0.0, 1.0, -1.0, 2.5, -3.0, 0.1, math.nan, math.inf, -math.inf,
    1e-300, -1e-300, 1e300, -1e300, 5e-324, 1e16, -1e16, 123456789.125, 2.0**53 + 2,
]
constants = st.builds(
    Const,
    st.one_of(st.sampled_from(SPECIAL_FLOATS), st.floats(allow_nan=True, allow_infinity=True)),
)
variables = st.builds(Var, var_names, st.booleans())
curs = st.builds(Cur, st.none() | field_names)
leaves = st.one_of(constants, variables, curs)


def _apply_of(children: st.SearchStrategy[Term]) -> st.SearchStrategy[Term]:
    return st.sampled_from(sorted(OPS)).flatmap(
        lambda op: st.tuples(*[children] * OPS[op].arity).map(lambda args: Apply(op, args))
    )


all_terms = st.recursive(leaves, _apply_of, max_leaves=12)
"""Random terms of every operation, every kind of leaf."""


def _every_op_once() -> list[Term]:
    a, b, c = Var("a"), Var("b", True), Cur("x")
    return [Apply(op, (a, b, c)[: spec.arity]) for op, spec in sorted(OPS.items())]


# --------------------------------------------------------------------------- round trip


@given(all_terms)
def test_round_trip(term):
    text = str(term)
    assert parse_term(text) == term, text


@given(all_terms)
def test_printing_is_a_fixpoint(term):
    text = str(term)
    assert str(parse_term(text)) == text


@pytest.mark.parametrize("term", _every_op_once(), ids=str)
def test_round_trip_every_op(term):
    assert parse_term(str(term)) == term


@pytest.mark.parametrize("value", SPECIAL_FLOATS, ids=repr)
def test_round_trip_constants(value):
    got = parse_term(str(Const(value)))
    assert isinstance(got, Const) and same(got.value, value)
    # Also as an operand on either side of every infix operator and under unary minus.
    for op in ("sub", "mul", "lt", "and"):
        for t in (Apply(op, (Const(value), Var("v"))), Apply(op, (Var("v"), Const(value)))):
            assert parse_term(str(t)) == t, str(t)
    for op in ("neg", "not"):
        t = Apply(op, (Const(value),))
        assert parse_term(str(t)) == t, str(t)


def test_const_equality_is_bitwise():
    assert Const(math.nan) == Const(math.nan)
    assert Const(0.0) != Const(-0.0)
    assert hash(Const(math.nan)) == hash(Const(math.nan))


# --------------------------------------------------------------------------- precedence


def _v(name: str, primed: bool = False) -> Var:
    return Var(name, primed)


def _ap(op: str, *args: Term) -> Apply:
    return Apply(op, tuple(args))


a, b, c, d = _v("a"), _v("b"), _v("c"), _v("d")

PRECEDENCE = [
    ("a - b - c", _ap("sub", _ap("sub", a, b), c)),
    ("a - (b - c)", _ap("sub", a, _ap("sub", b, c))),
    ("a / b * c", _ap("mul", _ap("div", a, b), c)),
    ("a * (b / c)", _ap("mul", a, _ap("div", b, c))),
    ("a % b % c", _ap("mod", _ap("mod", a, b), c)),
    ("a + b * c", _ap("add", a, _ap("mul", b, c))),
    ("(a + b) * c", _ap("mul", _ap("add", a, b), c)),
    ("a - b + c", _ap("add", _ap("sub", a, b), c)),
    ("a || b && c", _ap("or", a, _ap("and", b, c))),
    ("(a || b) && c", _ap("and", _ap("or", a, b), c)),
    ("a && b || c && d", _ap("or", _ap("and", a, b), _ap("and", c, d))),
    ("a || b || c", _ap("or", _ap("or", a, b), c)),
    ("a < b + 1", _ap("lt", a, _ap("add", b, Const(1.0)))),
    ("a == b && c != d", _ap("and", _ap("eq", a, b), _ap("ne", c, d))),
    ("a <= b || c >= d", _ap("or", _ap("le", a, b), _ap("ge", c, d))),
    ("(a < b) < c", _ap("lt", _ap("lt", a, b), c)),
    ("a < (b < c)", _ap("lt", a, _ap("lt", b, c))),
    ("!a && b", _ap("and", _ap("not", a), b)),
    ("!(a && b)", _ap("not", _ap("and", a, b))),
    ("-a * b", _ap("mul", _ap("neg", a), b)),
    ("-(a * b)", _ap("neg", _ap("mul", a, b))),
    ("--a", _ap("neg", _ap("neg", a))),
    ("-3", Const(-3.0)),
    ("- 3", Const(-3.0)),
    ("-(3)", _ap("neg", Const(3.0))),
    ("--3", _ap("neg", Const(-3.0))),
    ("-3 * a", _ap("mul", Const(-3.0), a)),
    ("2 - 3", _ap("sub", Const(2.0), Const(3.0))),
    ("2 - -3", _ap("sub", Const(2.0), Const(-3.0))),
    ("2--3", _ap("sub", Const(2.0), Const(-3.0))),
    ("-inf", Const(-math.inf)),
    ("-0.0", Const(-0.0)),
    ("-nan", _ap("neg", Const(math.nan))),
    ("!-1", _ap("not", Const(-1.0))),
    ("true + false", _ap("add", Const(1.0), Const(0.0))),
    ("a' + cur * 2", _ap("add", _v("a", True), _ap("mul", Cur(), Const(2.0)))),
    ("cur.price - cur . ts", _ap("sub", Cur("price"), Cur("ts"))),
    ("if(a, b, c) + min(a, max(b, c))", _ap("add", _ap("if", a, b, c),
                                            _ap("min", a, _ap("max", b, c)))),
    ("  a\n  +\tb  # comment", _ap("add", a, b)),
    (".5 + 5. + 1e-3 + 2E+2", _ap("add", _ap("add", _ap("add", Const(0.5), Const(5.0)),
                                                Const(1e-3)), Const(200.0))),
    ("min + 1", _ap("add", _v("min"), Const(1.0))),
]


@pytest.mark.parametrize(("text", "term"), PRECEDENCE, ids=[t for t, _ in PRECEDENCE])
def test_precedence(text, term):
    assert parse_term(text) == term


PRINTED = [
    (_ap("sub", a, _ap("sub", b, c)), "a - (b - c)"),
    (_ap("sub", _ap("sub", a, b), c), "a - b - c"),
    (_ap("lt", _ap("lt", a, b), c), "(a < b) < c"),
    (_ap("eq", a, _ap("ne", b, c)), "a == (b != c)"),
    (_ap("neg", Const(3.0)), "-(3)"),
    (Const(-3.0), "-3"),
    (_ap("neg", Const(-3.0)), "-(-3)"),
    (_ap("neg", _ap("neg", Const(3.0))), "--(3)"),
    (_ap("neg", _ap("add", a, b)), "-(a + b)"),
    (_ap("mul", _ap("add", a, b), c), "(a + b) * c"),
    (_ap("and", _ap("or", a, b), c), "(a || b) && c"),
    (_ap("or", a, _ap("or", b, c)), "a || (b || c)"),
    (_ap("add", _v("i", True), _ap("mul", Cur(), Const(2.0))), "i' + cur * 2"),
    (_ap("pow", Const(-8.0), _ap("div", Const(1.0), Const(3.0))), "pow(-8, 1 / 3)"),
    (Const(math.inf), "inf"),
    (Const(-math.inf), "-inf"),
    (Const(math.nan), "nan"),
    (Const(-0.0), "-0.0"),
    (Const(0.5), "0.5"),
    (Const(1e300), "1e+300"),
    (Cur("x"), "cur.x"),
]


@pytest.mark.parametrize(("term", "text"), PRINTED, ids=[t for _, t in PRINTED])
def test_printer(term, text):
    assert str(term) == text


def test_comparisons_do_not_chain():
    for text in ("a < b < c", "a == b == c", "a <= b > c", "1 != 2 != 3"):
        with pytest.raises(TermSyntaxError):
            parse_term(text)


# --------------------------------------------------------------------------- IEEE semantics


def _ev(text: str, cur: object = None, **env: float) -> float:
    return evaluate_term(parse_term(text), {Var(k): v for k, v in env.items()}, cur)


NAN, INF = math.nan, math.inf

# Every case documented in the module docstring of dt.terms, and a few neighbours.
IEEE = [
    ("1 / 0", INF), ("-1 / 0", -INF), ("1 / -0.0", -INF), ("-1 / -0.0", INF),
    ("0 / 0", NAN), ("-0.0 / 0", NAN), ("nan / 0", NAN), ("inf / 0", INF),
    ("5 % 0", NAN), ("-5 % 0", NAN), ("0 % 0", NAN),
    ("-7 % 3", 2.0), ("7 % -3", -2.0), ("-7 % -3", -1.0), ("7 % 3", 1.0), ("7.5 % 2", 1.5),
    ("sqrt(-1)", NAN), ("sqrt(4)", 2.0),
    ("log(0)", -INF), ("log(-1)", NAN), ("log(1)", 0.0),
    ("exp(1000)", INF), ("exp(-1000)", 0.0), ("exp(0)", 1.0),
    ("pow(-8, 1 / 3)", NAN), ("pow(2, 10)", 1024.0), ("pow(0, -1)", INF), ("pow(-8, 3)", -512.0),
    ("min(nan, 1)", NAN), ("min(1, nan)", NAN), ("max(nan, 1)", NAN), ("max(1, nan)", NAN),
    ("min(1, 2)", 1.0), ("max(1, 2)", 2.0),
    ("nan == nan", 0.0), ("nan != nan", 1.0), ("nan < 1", 0.0), ("nan <= 1", 0.0),
    ("nan > 1", 0.0), ("nan >= 1", 0.0), ("1 < nan", 0.0), ("1 != nan", 1.0), ("1 == nan", 0.0),
    ("1 < 2", 1.0), ("2 <= 2", 1.0), ("2 > 2", 0.0), ("-0.0 == 0", 1.0),
    ("nan && 1", 1.0), ("1 && nan", 1.0), ("0 && nan", 0.0), ("nan || 0", 1.0),
    ("0 || nan", 1.0), ("0 || -0.0", 0.0), ("!nan", 0.0), ("!0", 1.0), ("!-0.0", 1.0),
    ("!2", 0.0), ("2 && 3", 1.0), ("-1 || 0", 1.0),
    ("if(nan, 1, 2)", 1.0), ("if(0, 1, 2)", 2.0), ("if(-0.0, 1, 2)", 2.0), ("if(-5, 1, 2)", 1.0),
    ("if(1, nan, 2)", NAN),
    ("inf - inf", NAN), ("0 * inf", NAN), ("1e308 * 10", INF), ("-(0)", -0.0),
    ("abs(-2)", 2.0), ("abs(-inf)", INF), ("floor(-0.5)", -1.0), ("ceil(0.5)", 1.0),
    ("floor(nan)", NAN), ("fst(1, 2)", 1.0), ("snd(1, 2)", 2.0), ("fst(1, nan)", 1.0),
    ("true", 1.0), ("false", 0.0),
]


@pytest.mark.parametrize(("text", "want"), IEEE, ids=[t for t, _ in IEEE])
def test_ieee_semantics(text, want):
    got = _ev(text)
    assert type(got) is float
    assert same(got, want), got  # bitwise: NaN is NaN, and the sign of a zero counts


def test_negative_zero_is_kept():
    assert same(_ev("-(0)"), -0.0)
    assert same(_ev("-0.0 * 1"), -0.0)
    assert same(_ev("0 % -3"), -0.0)  # floored: the result takes the divisor's sign


finite = st.floats(allow_nan=False, allow_infinity=False)
any_float = st.floats(allow_nan=True, allow_infinity=True)
GRID = [0.0, -0.0, 1.0, -1.0, 2.5, -3.0, NAN, INF, -INF]
interesting = st.one_of(any_float, st.sampled_from(GRID))


def _truthy(x: float) -> bool:
    return x != 0.0  # NaN != 0, so NaN is true


def _py_div(x: float, y: float) -> float:
    if y == 0.0:
        if x == 0.0 or math.isnan(x):
            return NAN
        return math.copysign(INF, x) * math.copysign(1.0, y)
    return x / y


# An independent oracle per operation, in plain Python float arithmetic.
ORACLE = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": _py_div,
    "mod": lambda x, y: NAN if y == 0.0 else x % y,  # Python's float % is floored too
    "eq": lambda x, y: float(x == y), "ne": lambda x, y: float(x != y),
    "lt": lambda x, y: float(x < y), "le": lambda x, y: float(x <= y),
    "gt": lambda x, y: float(x > y), "ge": lambda x, y: float(x >= y),
    "and": lambda x, y: float(_truthy(x) and _truthy(y)),
    "or": lambda x, y: float(_truthy(x) or _truthy(y)),
    "not": lambda x: float(not _truthy(x)),
    "neg": operator.neg, "abs": abs,
    "min": lambda x, y: NAN if math.isnan(x) or math.isnan(y) else min(x, y),
    "max": lambda x, y: NAN if math.isnan(x) or math.isnan(y) else max(x, y),
    "if": lambda p, x, y: x if _truthy(p) else y,
    "fst": lambda x, y: x, "snd": lambda x, y: y,
    "floor": lambda x: x if not math.isfinite(x) else math.copysign(float(math.floor(x)), x),
    "ceil": lambda x: x if not math.isfinite(x) else math.copysign(float(math.ceil(x)), x),
}


def test_oracle_covers_the_easy_ops():
    # The transcendental ones (sqrt exp log pow) are checked by the table above.
    assert set(OPS) - set(ORACLE) == {"sqrt", "exp", "log", "pow"}


def _check_op(op: str, args: tuple[float, ...]) -> None:
    got = OPS[op].fn(*args)
    want = ORACLE[op](*args)
    assert type(got) is float, (op, args, type(got))
    if op in ("min", "max") and not any(math.isnan(x) for x in args) and want == 0.0:
        assert got == 0.0  # the sign of a zero chosen between 0.0 and -0.0 is not specified
    else:
        assert same(got, float(want)), (op, args, got, want)


@pytest.mark.parametrize("op", sorted(ORACLE))
def test_ops_on_special_values_exhaustively(op):
    """Every argument tuple over ±0, ±1, 2.5, -3, NaN, ±inf."""
    for args in itertools.product(GRID, repeat=OPS[op].arity):
        _check_op(op, args)


@pytest.mark.parametrize("op", sorted(ORACLE))
@given(data=st.data())
def test_ops_match_python_floats(op, data):
    _check_op(op, data.draw(st.tuples(*[interesting] * OPS[op].arity)))


@given(finite, finite.filter(lambda y: y != 0.0))
def test_mod_is_floored(x, y):
    """The result of ``%`` lies between 0 and the divisor (its sign), as np.mod."""
    r = evaluate_term(Apply("mod", (Var("x"), Var("y"))), {Var("x"): x, Var("y"): y})
    assert abs(r) <= abs(y)
    assert r == 0.0 or math.copysign(1.0, r) == math.copysign(1.0, y)


def test_evaluation_reads_variables_by_prime():
    term = parse_term("q' - q")
    assert _ev_env(term, {Var("q", True): 10.0, Var("q"): 3.0}) == 7.0


def _ev_env(term: Term, env: dict[Var, float], cur: object = None) -> float:
    return evaluate_term(term, env, cur)


def test_evaluation_of_cur_and_fields():
    assert _ev("cur * 2", 4.0) == 8.0
    assert _ev("cur.x - cur.y", {"x": 5.0, "y": 2.0}) == 3.0


# --------------------------------------------------------------------------- structure


def _count_nodes(t: Term) -> int:
    if isinstance(t, Apply):
        return 1 + sum(_count_nodes(x) for x in t.args)
    return 1


def _vars_of(t: Term) -> set[Var]:
    if isinstance(t, Var):
        return {t}
    if isinstance(t, Apply):
        return set().union(*(_vars_of(x) for x in t.args))
    return set()


def _fields_of(t: Term) -> set[str]:
    if isinstance(t, Cur):
        return set() if t.field is None else {t.field}
    if isinstance(t, Apply):
        return set().union(*(_fields_of(x) for x in t.args))
    return set()


def _reads_cur(t: Term) -> bool:
    return isinstance(t, Cur) or (isinstance(t, Apply) and any(_reads_cur(x) for x in t.args))


@given(all_terms)
def test_structure_queries(term):
    assert term.size == _count_nodes(term)
    assert term.variables() == frozenset(_vars_of(term))
    assert term.fields() == frozenset(_fields_of(term))
    assert term.reads_cur() == _reads_cur(term)


SIZES = [
    ("a", 1), ("-3", 1), ("-(3)", 2), ("a + b * c", 5), ("min(a, 1)", 3),
    ("if(a < b, cur.x, -a)", 7), ("((a))", 1), ("true", 1),
]


@pytest.mark.parametrize(("text", "size"), SIZES, ids=[t for t, _ in SIZES])
def test_size_examples(text, size):
    assert parse_term(text).size == size


def test_variables_fields_reads_cur_examples():
    t = parse_term("q' + q * cur.x - if(cur.y, r', q')")
    assert t.variables() == {Var("q", True), Var("q"), Var("r", True)}
    assert t.fields() == {"x", "y"}
    assert t.reads_cur()
    u = parse_term("min(a, 2) + cur")
    assert u.fields() == frozenset() and u.reads_cur()
    w = parse_term("a' * 2")
    assert not w.reads_cur() and w.fields() == frozenset() and w.variables() == {Var("a", True)}


def test_substitute_and_rename():
    t = parse_term("q' + q * cur")
    assert str(t.rename({Var("q", True): Var("r", True)})) == "r' + q * cur"
    assert str(t.substitute({Var("q"): parse_term("a + 1")})) == "q' + (a + 1) * cur"


def test_apply_checks_op_and_arity():
    with pytest.raises(ValueError, match="unknown operation"):
        Apply("frobnicate", (Const(1.0),))
    with pytest.raises(ValueError, match="takes 2"):
        Apply("add", (Const(1.0),))


# --------------------------------------------------------------------------- syntax errors

# (text, line, column, a fragment of the message). Line and column are 1-based and
# point at the offending text, or one past the end for a premature end of term.
BAD = [
    ("(a + b", 1, 7, "end of term"),
    ("a + b)", 1, 6, "unexpected ')'"),
    ("((a)", 1, 5, "end of term"),
    ("foo(1)", 1, 1, "unknown function 'foo'"),
    ("1 + bar(a, b)", 1, 5, "unknown function 'bar'"),
    ("min(1)", 1, 1, "min takes 2 argument(s), got 1"),
    ("a * if(1, 2)", 1, 5, "if takes 3 argument(s), got 2"),
    ("sqrt()", 1, 1, "sqrt takes 1 argument(s), got 0"),
    ("max(1, 2, 3)", 1, 1, "max takes 2 argument(s), got 3"),
    ("min'(1, 2)", 1, 1, "only variables can be primed"),
    ("cur.x'", 1, 5, "only variables can be primed"),
    ("cur' + 1", 1, 1, "'cur' is a keyword"),
    ("x + true'", 1, 5, "'true' is a keyword"),
    ("nan' * 2", 1, 1, "'nan' is a keyword"),
    ("a +", 1, 4, "end of term"),
    ("a *", 1, 4, "end of term"),
    ("a &&", 1, 5, "end of term"),
    ("!", 1, 2, "end of term"),
    ("a $ b", 1, 3, "unexpected character '$'"),
    ("a ^ 2", 1, 3, "unexpected character '^'"),
    ("é", 1, 1, "unexpected character 'é'"),
    ("", 1, 1, "end of term"),
    ("   ", 1, 4, "end of term"),
    ("# only a comment", 1, 17, "end of term"),
    ("a +\n* b", 2, 1, "unexpected '*'"),
    ("a +\n  b $ c", 2, 5, "unexpected character '$'"),
    ("a +\r\n* b", 2, 1, "unexpected '*'"),
    ("a +\n", 2, 1, "end of term"),
    ("a +\r\n", 2, 1, "end of term"),
    ("a +\n\n", 3, 1, "end of term"),
    # Form feed is whitespace but not a line break for the lexer: lines are "\n"-separated.
    ("a\f+ $", 1, 5, "unexpected character '$'"),
    ("a\f\n+ $", 2, 3, "unexpected character '$'"),
    ("a +\f", 1, 5, "end of term"),
    ("a b", 1, 3, "unexpected 'b'"),
    ("1 2", 1, 3, "unexpected '2'"),
    ("a < b < c", 1, 7, "unexpected '<'"),
    ("cur(1)", 1, 4, "unexpected '('"),
    ("x.y", 1, 2, "unexpected '.'"),
    ("a''", 1, 3, "unexpected character"),
    ("min(a,)", 1, 7, "unexpected ')'"),
    ("f(,)", 1, 3, "unexpected ','"),
]


@pytest.mark.parametrize(("text", "line", "column", "fragment"), BAD,
                         ids=[repr(t) for t, *_ in BAD])
def test_syntax_errors(text, line, column, fragment):
    with pytest.raises(TermSyntaxError) as info:
        parse_term(text)
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.line, err.column) == (line, column)
    assert fragment in err.message
    rendered = str(err).split("\n")
    assert rendered[0] == f"{err.message} at line {line}, column {column}"
    # The offending line of the source, then a caret under the offending column.
    source_line = text.split("\n")[line - 1].rstrip("\r")
    assert rendered[1] == "  " + source_line
    assert rendered[2] == "  " + " " * (column - 1) + "^"
    assert len(rendered) == 3


def test_syntax_error_expected_tokens_are_readable():
    with pytest.raises(TermSyntaxError, match=r"expected one of: .*a name"):
        parse_term("a + )")


# --------------------------------------------------------------------------- fuzz

_term_chars = "abcxyz_'0123456789.eE+-*/%<>=!&|(),# \n\t"
_keywordish = st.sampled_from(["cur", "true", "false", "inf", "nan", "min", "if", "pow", "cur.x"])
_fragments = st.one_of(st.text(alphabet=_term_chars, min_size=1, max_size=3), _keywordish)
grammar_soup = st.lists(_fragments, max_size=12).map("".join)


def _parses_or_syntax_error(text: str) -> None:
    """The only acceptable outcomes: a Term that round-trips, or a located TermSyntaxError."""
    try:
        term = parse_term(text)
    except TermSyntaxError as err:
        n_lines = max(len(text.split("\n")), 1)
        assert 1 <= err.line <= n_lines, (err.line, err.column)
        assert err.column >= 1
        assert "^" in str(err)
        return
    assert isinstance(term, Term)
    assert parse_term(str(term)) == term


@given(st.text(max_size=40))
def test_fuzz_unicode_text(text):
    _parses_or_syntax_error(text)


@given(st.binary(max_size=40))
def test_fuzz_bytes(raw):
    _parses_or_syntax_error(raw.decode("latin-1"))


@given(grammar_soup)
def test_fuzz_grammar_soup(text):
    _parses_or_syntax_error(text)


_edits = st.lists(
    st.tuples(st.sampled_from(["insert", "delete", "replace", "swap"]),
              st.integers(0, 1000),
              st.sampled_from([*_term_chars, "cur", "'", "(", ")", "\x00", "é"])),
    min_size=1, max_size=4,
)


def _mutate(text: str, edits: list[tuple[str, int, str]]) -> str:
    for kind, pos, piece in edits:
        if not text:
            text = piece
            continue
        k = pos % len(text)
        if kind == "insert":
            text = text[:k] + piece + text[k:]
        elif kind == "delete":
            text = text[:k] + text[k + 1:]
        elif kind == "replace":
            text = text[:k] + piece + text[k + 1:]
        else:
            j = (k + 1) % len(text)
            chars = list(text)
            chars[k], chars[j] = chars[j], chars[k]
            text = "".join(chars)
    return text


@given(all_terms, _edits)
def test_fuzz_mutations_of_valid_terms(term, edits):
    _parses_or_syntax_error(_mutate(str(term), edits))


@pytest.mark.parametrize("text", [
    "(" * 3000 + "1" + ")" * 3000,
    "-" * 3000 + "x",
    "!" * 3000 + "1",
    "1" + " + 1" * 3000,
    "min(" * 2000 + "1" + ", 2)" * 2000,
])
def test_deep_nesting_is_a_syntax_error_or_parses(text):
    """A very deep term must not escape as RecursionError (not a ValueError)."""
    with contextlib.suppress(TermSyntaxError):
        parse_term(text)


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "(" * n + "x" + ")" * n,
        lambda n: "-" * n + "x",
        lambda n: " + ".join(["x"] * (n + 1)),
        lambda n: "abs(" * n + "x" + ")" * n,
    ],
)
def test_nesting_limit_is_exact_and_parsed_terms_are_safe_to_walk(make):
    """Every term that parses survives size, printing and evaluation; one level more is an error."""
    from dt.terms import MAX_TERM_DEPTH

    deepest = None
    for n in range(MAX_TERM_DEPTH, 0, -1):
        try:
            deepest = parse_term(make(n))
            break
        except TermSyntaxError as err:
            assert f"more than {MAX_TERM_DEPTH} levels" in str(err)
    assert deepest is not None and n >= MAX_TERM_DEPTH // 2
    assert deepest.size >= 1 and parse_term(str(deepest)) == deepest
    evaluate_term(deepest, {Var("x"): 1.0})
    with pytest.raises(TermSyntaxError, match="levels deep"):
        parse_term(make(MAX_TERM_DEPTH + 1))


# --------------------------------------------------------------------------- evaluation errors


def test_cur_on_record_events():
    with pytest.raises(EvaluationError, match=r"reads cur but events are records.*fields: p, ts"):
        evaluate_term(parse_term("cur + 1"), {}, {"ts": 1.0, "p": 2.0})


def test_missing_field():
    with pytest.raises(EvaluationError) as info:
        evaluate_term(parse_term("cur.price * 2"), {}, {"ts": 1.0})
    assert "'price'" in str(info.value) and "cur.price" in str(info.value)
    assert "ts" in str(info.value)  # the fields the event does have


def test_field_on_scalar_events():
    with pytest.raises(EvaluationError, match=r"cur\.x .*single value"):
        evaluate_term(parse_term("cur.x"), {}, 3.0)


def test_cur_outside_an_event():
    with pytest.raises(EvaluationError, match="outside an event"):
        evaluate_term(parse_term("cur"), {}, None)


def test_evaluation_errors_are_value_errors():
    assert issubclass(EvaluationError, ValueError)
    assert issubclass(TermSyntaxError, ValueError)


@given(all_terms.filter(lambda t: not t.reads_cur()))
def test_evaluation_never_raises_on_defined_inputs(term):
    """IEEE arithmetic never raises: any term over defined variables has a float value."""
    env = {v: float(len(v.name)) - 2.5 for v in term.variables()}
    assume(len(env) < 20)
    assert isinstance(evaluate_term(term, env), float)
