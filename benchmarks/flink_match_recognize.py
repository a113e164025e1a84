"""Match queries against Flink SQL's MATCH_RECOGNIZE on one shared pattern set (issue 26).

Not a speed measurement: a cross-check of meaning against the peer CER users know. Each
case is a ``match(...)`` query and the MATCH_RECOGNIZE clause a Flink user would write
for it (strict contiguity: consecutive rows of a partition; the skip policies; bounded
and unbounded quantifiers; alternation; ``WITHIN``). Both run on the same random keyed
events (tags a, b, c; one event a second, so no ties); each match is compared by what
Flink's ONE ROW PER MATCH can measure: per variable its first and last event's id and
its count. A difference is printed with the events it concerns; RESULTS.md
"flink_match_recognize" says which are documented choices.

Flink runs in its own interpreter (``--flink-python``: a virtualenv with
``apache-flink``; it is not a dependency of this project), in streaming mode over a CSV
file, parallelism 1; each query is one job.

Reproduce::

    python3.11 -m venv /tmp/flink/venv && /tmp/flink/venv/bin/pip install apache-flink==2.2.1
    .venv/bin/python benchmarks/flink_match_recognize.py --flink-python /tmp/flink/venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from results import RESULTS, write_section

from qre import qre

VARIABLES = ("a", "b", "c")


@dataclass(frozen=True)
class Case:
    """A pattern in both languages, and the skip policy."""

    name: str
    ours: str
    pattern: str
    skip: str
    within_s: int | None = None

    def query(self) -> str:
        within = f", within {self.within_s}s" if self.within_s else ""
        return (f"alphabet a, b, c; match({self.ours}{within}, skip {self.skip}, "
                f"strategy strict)")

    def sql(self) -> str:
        skip = {"past_last": "SKIP PAST LAST ROW", "to_next": "SKIP TO NEXT ROW",
                "to_first b": "SKIP TO FIRST B", "to_last b": "SKIP TO LAST B"}[self.skip]
        measures = ", ".join(f"FIRST({v.upper()}.id) AS {v}_first, LAST({v.upper()}.id) AS "
                             f"{v}_last, COUNT({v.upper()}.id) AS {v}_n" for v in VARIABLES)
        within = f" WITHIN INTERVAL '{self.within_s}' SECOND" if self.within_s else ""
        return (f"SELECT * FROM events MATCH_RECOGNIZE (PARTITION BY k ORDER BY ts "
                f"MEASURES {measures} ONE ROW PER MATCH AFTER MATCH {skip} "
                f"PATTERN ({self.pattern}){within} DEFINE A AS tag = 'a', B AS tag = 'b', "
                f"C AS tag = 'c') AS T")


PATTERNS = [("seq", "seq(a, b, c)", "A B C"), ("plus", "seq(a, plus(b), c)", "A B+ C"),
            ("star", "seq(a, star(b), c)", "A B* C"),
            ("optional", "seq(a, optional(b), c)", "A B? C"),
            ("times 2", "seq(a, times(b, 2), c)", "A B{2} C"),
            ("times 1-3", "seq(a, times(b, 1, 3), c)", "A B{1,3} C"),
            ("or", "seq(or(a, b), c)", "(A | B) C"),
            ("plus last", "seq(a, plus(b))", "A B+?")]
CASES = [*(Case(name, ours, pattern, skip) for name, ours, pattern in PATTERNS
           for skip in ("past_last", "to_next", "to_first b", "to_last b")),
         Case("plus within", "seq(a, plus(b), c)", "A B+ C", "past_last", 5),
         Case("seq within 2s", "seq(a, b, c)", "A B C", "to_next", 2),
         Case("seq within 3s", "seq(a, b, c)", "A B C", "to_next", 3)]

FLINK_JOB = r'''
import json, sys
from pyflink.table import EnvironmentSettings, TableEnvironment

csv_path, queries_path, out_path = sys.argv[1:]
env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
env.get_config().set("parallelism.default", "1")
env.execute_sql(f"""CREATE TABLE events (k STRING, id BIGINT, tag STRING, ts TIMESTAMP(3),
    WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem', 'path' = '{csv_path}',
    'format' = 'csv')""")
results = {}
for name, sql in json.load(open(queries_path)).items():
    try:
        with env.execute_sql(sql).collect() as rows:
            results[name] = {"rows": [[None if x is None else (x if isinstance(x, (int, str))
                                       else str(x)) for x in r] for r in rows]}
    except Exception as e:  # the peer's refusal is a result too: its deepest cause
        causes = [x for x in str(e).splitlines() if x.startswith("Caused by:")]
        results[name] = {"error": (causes[-1] if causes else str(e).splitlines()[0])[:300]}
json.dump(results, open(out_path, "w"))
'''


def events(n: int, keys: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "k": [f"k{i}" for i in rng.integers(0, keys, n)],
        "id": np.arange(n, dtype=np.int64),
        "tag": rng.choice(list(VARIABLES), n, p=[0.35, 0.4, 0.25]),
        "ts": pd.Timestamp("2026-11-28") + pd.to_timedelta(np.arange(n), unit="s")})


def ours(case: Case, frame: pd.DataFrame) -> list[tuple]:
    """Per match: key, then per variable its first and last id and count."""
    rows = qre(case.query()).run_timed(frame["ts"], frame["tag"], keys=frame["k"])
    out = []
    for key, matched, names in zip(rows["key"], rows["rows"], rows["vars"], strict=True):
        ids = frame["id"].to_numpy()[matched]
        row: list = [key]
        for v in VARIABLES:
            mine = [int(i) for i, name in zip(ids, names, strict=True) if name == v]
            row += [mine[0] if mine else None, mine[-1] if mine else None, len(mine)]
        out.append(tuple(row))
    return sorted(out, key=repr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flink-python", required=True)
    parser.add_argument("--events", type=int, default=400)
    parser.add_argument("--keys", type=int, default=3)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    started = time.perf_counter()
    frame = events(args.events, args.keys, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "events.csv"
        frame.assign(ts=frame["ts"].dt.strftime("%Y-%m-%d %H:%M:%S")).to_csv(
            csv, index=False, header=False)
        queries = Path(tmp) / "queries.json"
        queries.write_text(json.dumps({c.query(): c.sql() for c in CASES}))
        job = Path(tmp) / "job.py"
        job.write_text(FLINK_JOB)
        out = Path(tmp) / "out.json"
        subprocess.run([args.flink_python, str(job), str(csv), str(queries), str(out)],
                       check=True, capture_output=True, text=True)
        flink = json.loads(out.read_text())
        version = subprocess.run([args.flink_python, "-c", "import importlib.metadata as m; "
                                  "print(m.version('apache-flink'))"],
                                 capture_output=True, text=True).stdout.strip()
    lines = ["| case | skip | ours | Flink | equal | first difference |",
             "|---|---|---:|---:|---|---|"]
    for case in CASES:
        mine = ours(case, frame)
        theirs = flink[case.query()]
        if "error" in theirs:
            lines.append(f"| {case.name} | {case.skip} | {len(mine)} | error | no | "
                         f"Flink: {theirs['error'].replace('|', '/')} |")
            continue
        peer = sorted((tuple(r) for r in theirs["rows"]), key=repr)
        extra = [r for r in mine if r not in peer]
        missing = [r for r in peer if r not in mine]
        diff = (f"ours only {extra[0]}" if extra else f"Flink only {missing[0]}"
                if missing else "")
        lines.append(f"| {case.name} | {case.skip} | {len(mine)} | {len(peer)} | "
                     f"{'yes' if mine == peer else 'no'} | {diff} |")
        print(lines[-1], flush=True)
    errors = " ".join(flink[c.query()].get("error", "") for c in CASES)
    notes = ["", "Where they differ, the difference is Flink's refusal, and ours a documented "
             "choice (docs/API.md, \"Matches as rows\"):"] if errors else []
    if "branching" in errors:
        notes.append("- `or`: Flink SQL's CEP has no alternation (`(A | B)`); ours is "
                     "Glushkov's, each branch a position.")
    if "Could not skip" in errors:
        notes.append("- `skip to_first v` / `to_last v` after a match without v (`B*`, `B?` "
                     "matching no B): Flink fails the job (\"Could not skip to B\"); ours "
                     "skips as `to_next`.")
    notes.append("- Greedy and reluctant quantifiers are not compared: with disjoint "
                 "conditions and strict contiguity a quantifier has one way to match, and "
                 "`B+?` last (Flink refuses a greedy last variable) gives, after its skip, "
                 "the matches ours does.")
    command = ("`.venv/bin/python benchmarks/flink_match_recognize.py --flink-python "
               f"{args.flink_python} --events {args.events} --keys {args.keys} --seed "
               f"{args.seed}`")
    text = "\n".join([
        "## flink_match_recognize: match queries against Flink SQL MATCH_RECOGNIZE", "",
        f"{command} on {time.strftime('%Y-%m-%d')} ({platform.machine()}, apache-flink "
        f"{version}, {time.perf_counter() - started:.0f} s). {args.events} events, "
        f"{args.keys} keys, tags a/b/c, one a second; per match the key and, per variable, "
        f"its first and last event id and count (what ONE ROW PER MATCH measures); "
        f"`strategy strict` (MATCH_RECOGNIZE's contiguity). Matches compared as multisets.",
        "", *lines, *notes])
    write_section(args.output, "flink_match_recognize", text)
    print(text)


if __name__ == "__main__":
    main()
