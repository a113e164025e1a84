"""Wrong types into every public Python entry point: a TypeError or ValueError that names
the argument, never an internal error (issue 19, point 13; the fault-and-fuzz suite).

Each example replaces one argument of a valid call by a value of a wrong type (a
scalar, None, a string, a mapping, a set, an object, a nested or 2-D column, a
column of odd entries...) and keeps the others valid. The call may succeed when
the value happens to be acceptable (a list of numbers as tags is a list of
codes); when it fails, the error is a ``TypeError`` / ``ValueError`` whose
message names the argument. Spark's entry points get the same treatment in
tests/test_fuzz_spark.py.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from qre import qre
from qre.language.errors import QreError

pytestmark = pytest.mark.fuzz

MONITOR = qre("iter(atom(a, cur), 0, +)", alphabet=["a", "b"])
WINDOW = qre("alphabet a, b; aggregate(sum(cur), 2s, 1s)")
RECORDS = qre("iter(atom(a, cur.x), 0, +)", alphabet=["a", "b"])

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=5),
    st.binary(max_size=5), st.complex_numbers(max_magnitude=1e3),
    st.just(object()), st.just(lambda: 0), st.just(dt.timedelta(1)),
    st.just(dt.datetime(2024, 1, 1)), st.just(decimal.Decimal("1e400")),
    st.just(np.float32(1.5)), st.just(np.array(7)), st.just(Ellipsis),
)
WRONG = st.one_of(
    _SCALARS,
    st.lists(_SCALARS, min_size=0, max_size=4),
    st.lists(st.lists(st.integers(), max_size=2), min_size=3, max_size=3),
    st.dictionaries(st.text(max_size=2), _SCALARS, max_size=2),
    st.sets(st.integers(), max_size=3),
    st.just(np.zeros((3, 2))), st.just(np.array(["a", "b", "a"], dtype=object).reshape(3, 1)),
    st.just(range(3)), st.just(iter([1, 2, 3])),
)
"""Values of the wrong type for most arguments (some happen to be valid: fine)."""

TAGS, VALUES, TIMES, KEYS = ["a", "b", "a"], [1.0, 2.0, 3.0], [1, 2, 3], [1, 1, 2]

CALLS: dict[str, tuple[Callable[..., Any], dict[str, Any], dict[str, str]]] = {
    # name: (function, valid arguments, what each argument is called in messages)
    "qre": (lambda query, alphabet: qre(query, alphabet),
            {"query": "iter(atom(a, cur), 0, +)", "alphabet": ["a", "b"]}, {}),
    "run": (lambda tags, values, times, tiebreak, engine, unknown_tags: MONITOR.run(
        tags, values, times=times, tiebreak=tiebreak, engine=engine, unknown_tags=unknown_tags),
            {"tags": TAGS, "values": VALUES, "times": TIMES, "tiebreak": None,
             "engine": "table", "unknown_tags": "error"}, {}),
    "run_keys": (lambda keys, tags, values, times, engine: MONITOR.run_keys(
        keys, tags, values, times=times, engine=engine),
                 {"keys": KEYS, "tags": TAGS, "values": VALUES, "times": None,
                  "engine": "table"}, {}),
    "run records": (lambda tags, values: RECORDS.run(tags, values, engine="table"),
                    {"tags": TAGS, "values": {"x": VALUES}}, {}),
    "session": (lambda state, engine: MONITOR.session(state, engine=engine),
                {"state": None, "engine": "table"}, {}),
    "feed": (lambda tags, values, unknown_tags: MONITOR.session(engine="table").feed(
        tags, values, unknown_tags=unknown_tags),
             {"tags": TAGS, "values": VALUES, "unknown_tags": "error"}, {}),
    "run_timed": (lambda times, tags, values, keys, time_unit, watermark, undefined:
                  WINDOW.run_timed(times, tags, values, keys=keys, time_unit=time_unit,
                                   watermark=watermark, undefined=undefined, engine="table"),
                  {"times": TIMES, "tags": TAGS, "values": VALUES, "keys": KEYS,
                   "time_unit": "s", "watermark": None, "undefined": "drop"}, {}),
}

# Arguments where None is the default (valid); a wrong value is anything else.
_OPTIONAL = {"values", "times", "tiebreak", "state", "keys", "watermark", "alphabet"}


@pytest.mark.parametrize("entry", sorted(CALLS))
@given(data=st.data())
def test_a_wrong_type_is_an_error_naming_the_argument(entry: str, data: st.DataObject) -> None:
    function, valid, _ = CALLS[entry]
    argument = data.draw(st.sampled_from(sorted(valid)), label="argument")
    wrong = data.draw(WRONG, label="value")
    note(f"{entry}({argument}={wrong!r})")
    arguments = {**valid, argument: wrong}
    try:
        function(**arguments)
    except QreError:
        assert argument in ("query", "alphabet"), "a query error from a data argument"
    except (TypeError, ValueError) as error:
        message = str(error)
        assert _names(message, argument), f"{type(error).__name__}: {message}"
        assert "Traceback" not in message and "object is not" not in message, message
    # Success is fine: the value was acceptable after all (e.g. [] tags with [] values
    # fails on length, a list of ints is tag codes).


def _names(message: str, argument: str) -> bool:
    """The message names the argument, or its role (a column of values is 'column')."""
    names = {argument, argument.replace("_", " ")}
    if argument == "values":
        names |= {"column", "cur", "record"}
    if argument == "query":
        names.add("qre")
    return any(name in message for name in names)
