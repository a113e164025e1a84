#!/usr/bin/env bash
# Set-up shared by `make demo` and `make test`: a Java runtime for PySpark and a
# project-local virtualenv (.venv) with the project installed in editable mode.
# Idempotent: re-installs only when pyproject.toml changed since the last install.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if ! command -v java >/dev/null 2>&1; then
    echo "bootstrap: no Java runtime found; installing one from the distribution (needed by PySpark)" >&2
    sudo_cmd=""
    if [ "$(id -u)" != 0 ]; then sudo_cmd="sudo"; fi
    $sudo_cmd apt-get update -qq
    $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi

python="${PYTHON:-}"
if [ -z "$python" ]; then
    for candidate in python3.11 python3.12 python3.13 python3; do
        if command -v "$candidate" >/dev/null 2>&1; then python="$candidate"; break; fi
    done
fi
if [ ! -x .venv/bin/python ]; then
    echo "bootstrap: creating .venv with $python" >&2
    "$python" -m venv .venv
fi
stamp=".venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ]; then
    echo "bootstrap: installing the project and its test tools into .venv" >&2
    # The distribution was called qre before 0.2 (a name PyPI gives to another project).
    .venv/bin/python -m pip uninstall -q -y qre > /dev/null 2>&1 || true
    # The log keeps pip's output (build warnings included) out of the way; shown on failure.
    if ! { .venv/bin/python -m pip install -q --upgrade pip &&
           .venv/bin/python -m pip install -q -e ".[test]"; } > .venv/install.log 2>&1; then
        cat .venv/install.log >&2
        echo "bootstrap: installation failed (log above, also in .venv/install.log)" >&2
        exit 1
    fi
    rm -f .venv/.installed-*
    touch "$stamp"
fi
