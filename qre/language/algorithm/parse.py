"""A Python subset → the streaming-algorithm IR (:mod:`.ir`), with located errors.

The text is Python, parsed with :mod:`ast`; three functions make an algorithm::

    def init(x):             # parameters: the initial vector (the DT's inputs)
        total = x
        seen = False

    def update(tag, cur):    # one event: its tag and its value
        if tag == "alarm":
            seen = True
        total = total + cur

    def output():            # the output: a data expression, present when the flag holds
        if seen:
            return total

What each part may hold:

* statements: ``name = expr``, ``name += expr`` (and ``-=``, ``*=``), ``if`` /
  ``elif`` / ``else``, ``pass`` — no loops, calls of your own, ``return``
  outside ``output``, or other names than the variables, the inputs (init),
  ``tag`` and ``cur`` (update);
* a variable is Boolean if its first assignment is a Boolean expression
  (``True``, ``False``, a Boolean variable, a tag test, ``not``/``and``/``or``
  of those), else data; it keeps that kind;
* data expressions: numbers, variables, ``cur`` and ``cur.FIELD``, ``+ - * / %
  **``, comparisons (as 0/1), and ``min max abs sqrt exp log floor ceil pow``;
* Boolean expressions (conditions, Boolean assignments, the output flag):
  ``True``, ``False``, Boolean variables, ``tag == "a"``, ``tag != "a"``,
  ``tag in ("a", "b")``, ``not``, ``and``, ``or``. A condition that reads data
  is refused: that is §5.4.3's regularity restriction (Theorem 5.10 shows
  that without it ``split`` would not be streamable);
* ``output`` is ``return e``, ``if c: return e`` or ``return e if c else None``;
* optionally, at the top, ``ALPHABET = ("a", "b", ...)``: the tags of the
  events (by default, the tags the text tests);
* ``min``/``max`` are the DT signature's (NaN-propagating, as numpy's), not
  Python's builtins, which return their first argument when a NaN is compared;
* init assigns every variable (on every path): a variable's value is read
  at every step.

Errors are :class:`~dt.errors.SourceError` with line, column and a caret.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field

from dt.boolean import Both, Either, Neg, Truth
from dt.errors import SourceError
from dt.terms import OPS, Apply, Const, Cur, Term, Var

from .ir import Algorithm, Assign, BoolExpr, BVar, If, Statement, TagIn

__all__ = ["parse_algorithm"]

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Mod: "mod",
           ast.Pow: "pow"}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
           ast.NotEq: "ne"}
_CALLS = ("min", "max", "abs", "sqrt", "exp", "log", "floor", "ceil", "pow")
_AUG = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul"}
_REGULARITY = ("conditions and Boolean variables read only Booleans and the tag "
               "(the regularity restriction of seed 003, §5.4.3)")


@dataclass
class _Scope:
    """What a program may read: the variables with their kinds, and its own names."""

    kinds: dict[str, str]  # variable -> "bool" | "data", in order of first assignment
    program: str  # "init" | "update" | "output"
    inputs: tuple[str, ...] = ()
    assigned: set[str] = field(default_factory=set)  # definitely assigned so far (init)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tags: list[str] = []

    def error(self, message: str, node: ast.AST) -> SourceError:
        return SourceError(message, self.text, getattr(node, "lineno", 1),
                           getattr(node, "col_offset", 0) + 1)

    # ------------------------------------------------------------------ Booleans

    def is_boolean(self, node: ast.expr, scope: _Scope) -> bool:
        """Is ``node`` a Boolean expression (decides a new variable's kind)?"""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, bool)
        if isinstance(node, ast.Name):
            return scope.kinds.get(node.id) == "bool"
        if isinstance(node, ast.Compare):
            return any(isinstance(n, ast.Name) and n.id == "tag"
                       for n in (node.left, *node.comparators))
        if isinstance(node, ast.UnaryOp):
            return isinstance(node.op, ast.Not)
        return isinstance(node, ast.BoolOp)

    def boolean(self, node: ast.expr, scope: _Scope) -> BoolExpr:
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return Truth(node.value)
        if isinstance(node, ast.Name):
            kind = scope.kinds.get(node.id)
            if kind == "bool":
                self.check_assigned(node, scope)
                return BVar(node.id)
            if kind == "data" or node.id in ("cur", *scope.inputs):
                raise self.error(f"{node.id} is data: {_REGULARITY}", node)
            raise self.error(f"unknown name {node.id}", node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return Neg(self.boolean(node.operand, scope))
        if isinstance(node, ast.BoolOp):
            parts = [self.boolean(v, scope) for v in node.values]
            combine = Both if isinstance(node.op, ast.And) else Either
            result = parts[0]
            for part in parts[1:]:
                result = combine(result, part)
            return result
        if isinstance(node, ast.Compare):
            return self.tag_test(node, scope)
        raise self.error(f"not a Boolean expression: {_REGULARITY}", node)

    def tag_test(self, node: ast.Compare, scope: _Scope) -> BoolExpr:
        if len(node.ops) != 1:
            raise self.error("one comparison at a time", node)
        op, left, right = node.ops[0], node.left, node.comparators[0]
        if isinstance(right, ast.Name) and right.id == "tag" and isinstance(op, ast.Eq | ast.NotEq):
            left, right = right, left
        if not (isinstance(left, ast.Name) and left.id == "tag"):
            raise self.error(f"a comparison of data is not a condition: {_REGULARITY}", node)
        if scope.program != "update":
            raise self.error("tag is the current event's tag: only update reads it", left)
        if isinstance(op, ast.Eq | ast.NotEq):
            tags = (self.tag_literal(right),)
        elif isinstance(op, ast.In | ast.NotIn):
            if not isinstance(right, ast.Tuple | ast.List | ast.Set) or not right.elts:
                raise self.error('tag in (...) takes a tuple of tag strings', right)
            tags = tuple(self.tag_literal(e) for e in right.elts)
        else:
            raise self.error("tags compare with ==, !=, in and not in", node)
        test: BoolExpr = TagIn(frozenset(tags))
        return Neg(test) if isinstance(op, ast.NotEq | ast.NotIn) else test

    def tag_literal(self, node: ast.expr) -> str:
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or not node.value:
            raise self.error("a tag is a non-empty string", node)
        if node.value not in self.tags:
            self.tags.append(node.value)
        return node.value

    # ------------------------------------------------------------------ data

    def data(self, node: ast.expr, scope: _Scope) -> Term:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) \
                and not isinstance(node.value, bool):
            return Const(float(node.value))
        if isinstance(node, ast.Name):
            return self.data_name(node, scope)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "cur":
            self.data_name(node.value, scope)
            return Cur(node.attr)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return Apply(_BINOPS[type(node.op)], (self.data(node.left, scope),
                                                  self.data(node.right, scope)))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            inner = self.data(node.operand, scope)
            if isinstance(node.op, ast.UAdd):
                return inner
            return Const(-inner.value) if isinstance(inner, Const) else Apply("neg", (inner,))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMPOPS:
            if self.is_boolean(node, scope):
                raise self.error("a tag test is Boolean, not data", node)
            return Apply(_CMPOPS[type(node.ops[0])], (self.data(node.left, scope),
                                                      self.data(node.comparators[0], scope)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in _CALLS and not node.keywords:
            arity = OPS[node.func.id].arity
            if len(node.args) != arity:
                raise self.error(f"{node.func.id} takes {arity} argument(s)", node)
            return Apply(node.func.id, tuple(self.data(a, scope) for a in node.args))
        if self.is_boolean(node, scope):
            raise self.error("a Boolean is not data (booleans stay apart from data, §5.4.3)",
                             node)
        raise self.error("not in the subset: a data expression is numbers, variables, cur, "
                         f"+ - * / % **, comparisons and {', '.join(_CALLS)}", node)

    def data_name(self, node: ast.Name, scope: _Scope) -> Term:
        if node.id == "cur":
            if scope.program != "update":
                raise self.error("cur is the current event's value: only update reads it", node)
            return Cur()
        if node.id in scope.inputs:
            return Var(node.id)
        kind = scope.kinds.get(node.id)
        if kind == "data":
            self.check_assigned(node, scope)
            return Var(node.id)
        if kind == "bool":
            raise self.error(f"{node.id} is Boolean: it is read in conditions, not in data", node)
        raise self.error(f"unknown name {node.id}", node)

    def check_assigned(self, node: ast.Name, scope: _Scope) -> None:
        if scope.program == "init" and node.id not in scope.assigned:
            raise self.error(f"{node.id} is read before init assigns it", node)

    # ------------------------------------------------------------------ statements

    def block(self, body: list[ast.stmt], scope: _Scope) -> tuple[Statement, ...]:
        out: list[Statement] = []
        for stmt in body:
            s = self.statement(stmt, scope)
            if s is not None:
                out.append(s)
        return tuple(out)

    def statement(self, stmt: ast.stmt, scope: _Scope) -> Statement | None:
        if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr)
                                          and isinstance(stmt.value, ast.Constant)):
            return None  # pass, or a docstring
        if isinstance(stmt, ast.Assign):
            if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
                raise self.error("assign one variable at a time: name = expression", stmt)
            return self.assign(stmt.targets[0], stmt.value, stmt, scope)
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) \
                and type(stmt.op) in _AUG:
            value = ast.BinOp(ast.Name(stmt.target.id, ast.Load()), stmt.op, stmt.value)
            ast.copy_location(value, stmt)
            ast.copy_location(value.left, stmt.target)
            return self.assign(stmt.target, value, stmt, scope)
        if isinstance(stmt, ast.If):
            cond = self.boolean(stmt.test, scope)
            before = set(scope.assigned)
            then = self.block(stmt.body, scope)
            after_then, scope.assigned = scope.assigned, set(before)
            orelse = self.block(stmt.orelse, scope)
            scope.assigned &= after_then  # definitely assigned: on both paths
            return If(cond, then, orelse, stmt.lineno, stmt.col_offset + 1)
        raise self.error("not in the subset: a loop-free program of assignments, if and pass "
                         "(seed 003, §5.4.3)", stmt)

    def assign(self, target: ast.Name, value: ast.expr, stmt: ast.stmt, scope: _Scope) -> Assign:
        name = target.id
        if name in ("tag", "cur", *scope.inputs) or name in _CALLS:
            raise self.error(f"{name} cannot be assigned", target)
        kind = scope.kinds.get(name)
        if kind is None:
            if scope.program != "init":
                raise self.error(f"{name} is new: init assigns every variable first", target)
            kind = scope.kinds[name] = "bool" if self.is_boolean(value, scope) else "data"
        expr: Term | BoolExpr = (self.boolean(value, scope) if kind == "bool"
                                 else self.data(value, scope))
        scope.assigned.add(name)
        return Assign(name, expr, stmt.lineno, stmt.col_offset + 1)

    # ------------------------------------------------------------------ output

    def output(self, fn: ast.FunctionDef, scope: _Scope) -> tuple[BoolExpr, Term]:
        body = [s for s in fn.body if not (isinstance(s, ast.Expr)
                                          and isinstance(s.value, ast.Constant))]
        shape = "output is return e, if c: return e, or return e if c else None"
        if len(body) != 1:
            raise self.error(shape, fn)
        stmt = body[0]
        if isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 \
                and isinstance(stmt.body[0], ast.Return) and stmt.body[0].value is not None:
            return self.boolean(stmt.test, scope), self.data(stmt.body[0].value, scope)
        if isinstance(stmt, ast.Return) and stmt.value is not None:
            v = stmt.value
            if isinstance(v, ast.IfExp) and isinstance(v.orelse, ast.Constant) \
                    and v.orelse.value is None:
                return self.boolean(v.test, scope), self.data(v.body, scope)
            return Truth(True), self.data(v, scope)
        raise self.error(shape, stmt)


def _declared_alphabet(p: _Parser, tree: ast.Module) -> tuple[str, ...] | None:
    """The tags of a top-level ``ALPHABET = ("a", "b")``, if any."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "ALPHABET":
            value = node.value
            if not isinstance(value, ast.Tuple | ast.List) or not value.elts or not all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value
                    for e in value.elts):
                raise p.error("ALPHABET is a tuple of tag strings", value)
            return tuple(e.value for e in value.elts)  # type: ignore[attr-defined]
    return None


def _functions(p: _Parser, tree: ast.Module) -> dict[str, ast.FunctionDef]:
    found: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "ALPHABET":
            continue
        if isinstance(node, ast.FunctionDef) and node.name in ("init", "update", "output"):
            if node.name in found:
                raise p.error(f"{node.name} is defined twice", node)
            if node.decorator_list or node.args.vararg or node.args.kwarg or \
                    node.args.kwonlyargs or node.args.defaults or node.args.posonlyargs:
                raise p.error("plain parameters only", node)
            found[node.name] = node
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            raise p.error("an algorithm is the functions init, update and output", node)
    for name in ("init", "update", "output"):
        if name not in found:
            raise SourceError(f"def {name}(...) is missing", p.text, 1, 1)
    params = [a.arg for a in found["update"].args.args]
    if params != ["tag", "cur"]:
        raise p.error("update's parameters are (tag, cur)", found["update"])
    if found["output"].args.args:
        raise p.error("output takes no parameter", found["output"])
    return found


def parse_algorithm(text: str, alphabet: Iterable[str] | None = None) -> Algorithm:
    """The :class:`~.ir.Algorithm` of ``text`` (module docstring).

    ``alphabet`` defaults to the text's ``ALPHABET = ("a", "b", ...)`` if it has one,
    else to the tags it tests, in order of appearance; it must contain the tags
    tested. Every tag runs ``update`` (a tag outside the alphabet cannot be fed).
    """
    p = _Parser(text)
    try:
        tree = ast.parse(text)
    except SyntaxError as err:
        raise SourceError(f"invalid Python: {err.msg}", text, err.lineno or 1,
                          err.offset or 1) from None
    fns = _functions(p, tree)
    inputs = tuple(a.arg for a in fns["init"].args.args)
    kinds: dict[str, str] = {}
    init_scope = _Scope(kinds, "init", inputs)
    init = p.block(fns["init"].body, init_scope)
    update = p.block(fns["update"].body, _Scope(kinds, "update"))
    missing = [v for v in kinds if v not in init_scope.assigned]
    if missing:
        raise p.error(f"init does not assign {', '.join(missing)} on every path: every "
                      f"variable starts in init", fns["init"])
    flag, result = p.output(fns["output"], _Scope(kinds, "output"))
    declared = _declared_alphabet(p, tree)
    tags = (tuple(alphabet) if alphabet is not None else declared if declared is not None
            else tuple(p.tags))
    unknown = [t for t in p.tags if t not in tags]
    if unknown:
        raise SourceError(f"tags {', '.join(unknown)} are not in the alphabet "
                          f"{', '.join(tags)}", text, 1, 1)
    if not tags:
        raise SourceError("no tag is tested: give the alphabet", text, 1, 1)
    booleans = tuple(v for v, k in kinds.items() if k == "bool")
    data = tuple(v for v, k in kinds.items() if k == "data")
    return Algorithm(tags, inputs, booleans, data, init, update, flag, result)
