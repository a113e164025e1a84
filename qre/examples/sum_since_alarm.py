"""A streaming algorithm (Theorem 5.11): the sum of the values, shown while an alarm holds.

Read by :mod:`qre.language.algorithm`, not imported: its variables are the
algorithm's state, kept from one call to the next (hence the noqa below).
"""
# ruff: noqa: F821, F841

ALPHABET = ("alarm", "reset", "ok")


def init(x):
    total = x
    seen = False


def update(tag, cur):
    if tag == "alarm":
        seen = True
    elif tag == "reset":
        seen = False
        total = 0
    total += cur


def output():
    if seen:
        return total
