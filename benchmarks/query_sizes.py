"""DT sizes of families of nested queries of growing size (Theorem 5.7).

Run: ``.venv/bin/python benchmarks/query_sizes.py``. For each family and
nesting depth n it prints the query's size (AST nodes plus term nodes), the
size of A_α and of I_α, and the ratios |A|/n² and |I|/n: I stays linear and A
at most quadratic in the query.
"""

from __future__ import annotations

from dt.terms import Cur
from qre.language import ast
from qre.language.ast import query_size
from qre.language.compiler import compile_query

SIGMA = ("a", "b")
PLUS = ast.BuiltinOp("+")


def right_split(n: int) -> ast.Query:
    """split(a, split(a, … split(a, b) …)): each level saves the value of the rest (I)."""
    q: ast.Query = ast.Atom("b", Cur())
    for _ in range(n):
        q = ast.Split(ast.Atom("a", Cur()), q, PLUS)
    return q


def nested_iter(n: int) -> ast.Query:
    """iter(split(iter(split(… , b), …), b), …): iterations inside splits."""
    q: ast.Query = ast.Atom("a", Cur())
    for _ in range(n):
        q = ast.Iter(ast.Split(q, ast.Atom("b", Cur()), PLUS), 0.0, PLUS)
    return q


def nested_combine(n: int) -> ast.Query:
    """combine(q, q', +) nested: parallel composition, linear."""
    q: ast.Query = ast.Iter(ast.Atom("a", Cur()), 0.0, PLUS)
    for _ in range(n):
        q = ast.Combine((q, ast.Iter(ast.Atom("a", Cur()), 1.0, PLUS)), PLUS)
    return q


def main() -> None:
    print(f"{'family':<15} {'n':>3} {'|query|':>8} {'|A|':>8} {'|I|':>7} "
          f"{'|A|/|q|^2':>10} {'|I|/|q|':>8}")
    for family in (right_split, nested_iter, nested_combine):
        for n in (1, 2, 4, 8, 16, 32):
            q = family(n)
            compiled = compile_query(q, SIGMA, lean=None)  # the constructions as printed
            size_q = query_size(q)
            a, i = compiled.value.size, compiled.identity.size
            print(f"{family.__name__:<15} {n:>3} {size_q:>8} {a:>8} {i:>7} "
                  f"{a / size_q**2:>10.3f} {i / size_q:>8.2f}")


if __name__ == "__main__":
    main()
