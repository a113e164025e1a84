#!/usr/bin/env bash
# The release as a user gets it: build the wheel, install it into a fresh virtualenv in a
# temporary directory outside the checkout, and run from there a compile, a run_keys, the
# CLI (compile, run on a CSV, --version, python -m qre) and the local demo. Nothing of the
# checkout is on the path: a module or data file missing from the wheel fails here.
# Called by .ci/run after `make test` (which creates .venv); `make wheel-check` runs it alone.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-$root/.venv/bin/python}"
work="$(mktemp -d "${TMPDIR:-/tmp}/qre-wheel-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
step() { echo "wheel-check: $*" >&2; }

step "building the wheel"
# From a copy of the files git knows (tracked, or new and not ignored): setuptools writes
# build/ and *.egg-info next to the sources, and nothing else of the checkout goes in.
mkdir "$work/src"
(cd "$root" && git ls-files -z --cached --others --exclude-standard \
    | xargs -0 -I{} sh -c 'test ! -e "{}" || echo "{}"' \
    | tar -cf - -T -) | tar -xf - -C "$work/src"
"$python" -m pip wheel -q --no-deps -w "$work/dist" "$work/src" > "$work/build.log" 2>&1 \
    || { cat "$work/build.log" >&2; exit 1; }
wheel="$(ls "$work"/dist/qre_monitor-*.whl)"
step "installing $(basename "$wheel") into a fresh virtualenv"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q "$wheel" > "$work/install.log" 2>&1 \
    || { cat "$work/install.log" >&2; exit 1; }

cd "$work"
unset PYTHONPATH
export QRE_CACHE_DIR="$work/cache"   # a first use compiles its kernels, as for a new user
py="$work/venv/bin/python"
qre="$work/venv/bin/qre"

step "imports come from the installed wheel"
"$py" - <<'EOF'
import pathlib, sys
import codegen, dt, qre, spark_udf
site = pathlib.Path(sys.prefix)
for package in (qre, dt, codegen, spark_udf):
    where = pathlib.Path(package.__file__).resolve()
    assert site in where.parents, f"{package.__name__} imported from {where}, not {site}"
print("qre", qre.__version__)
EOF

step "compile and run_keys"
"$py" - <<'EOF'
from qre import qre
m = qre("iter(or(atom(deposit, cur), atom(withdraw, -cur)), 0, +)")
out = m.run_keys(["a", "b", "a", "b"], ["deposit", "deposit", "withdraw", "withdraw"],
                 [100.0, 5.0, 30.0, 1.0])
assert out.value.tolist() == [100.0, 5.0, 70.0, 4.0], out.value
out = m.run_keys(["a", "b", "a", "b"], ["deposit", "deposit", "withdraw", "withdraw"],
                 [100.0, 5.0, 30.0, 1.0], engine="codegen")
assert out.value.tolist() == [100.0, 5.0, 70.0, 4.0], out.value
EOF

step "the command line"
"$qre" --version | grep -q "^qre "
"$py" -m qre --version | grep -q "^qre "
"$qre" compile 'iter(atom(a, cur), 0, +)' --stats > /dev/null
printf 'user,tag,amount\nu,deposit,100\nv,deposit,7\nu,withdraw,30\n' > events.csv
"$qre" run 'iter(or(atom(deposit, cur), atom(withdraw, -cur)), 0, +)' --input events.csv \
    --key user --value amount > out.csv
"$py" - <<'EOF'
import pandas as pd
out = pd.read_csv("out.csv")
assert out["amount"].tolist() == [100, 7, 30], out
assert out["value"].tolist() == [100.0, 7.0, 70.0], out
EOF
if "$qre" run 'sum(cur)' --input missing.csv --value x 2> err.txt; then exit 1; fi
grep -q "no such file" err.txt && ! grep -q Traceback err.txt

step "the local demo (python -m qre.demo)"
"$py" -m qre.demo > demo.txt
grep -q "events from events.csv" demo.txt
step "ok"
