"""What the wheel holds: every package and every data file the code reads at run time.

The whole release (built wheel, fresh virtualenv outside the checkout) is checked by
scripts/wheel_check.sh in CI; this is the fast part that runs with the tests: the
discovery rules of pyproject.toml against the source tree, the version, the entry
points. (Before 0.2 the wheel lacked codegen.optimize and the bundled examples.)
"""

from __future__ import annotations

import fnmatch
import subprocess
import sys
import tomllib
from pathlib import Path

from setuptools import find_packages

import qre
from qre import examples

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
TOP_LEVEL = ("qre", "dt", "codegen", "spark_udf")


def _packages_on_disk() -> set[str]:
    found = set()
    for top in TOP_LEVEL:
        for init in (ROOT / top).rglob("__init__.py"):
            found.add(".".join(init.parent.relative_to(ROOT).parts))
    return found


def test_every_package_on_disk_goes_into_the_wheel():
    include = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    shipped = set(find_packages(str(ROOT), include=include))
    assert _packages_on_disk() <= shipped
    assert "codegen.optimize" in shipped and "qre.examples" in shipped
    assert all(p.split(".")[0] in TOP_LEVEL for p in shipped)


def test_every_data_file_of_a_package_is_package_data():
    """Non-Python files inside the packages (grammars, bundled examples) match a
    package-data pattern of their package."""
    data = PYPROJECT["tool"]["setuptools"]["package-data"]
    packages = _packages_on_disk()
    missing = []
    for top in TOP_LEVEL:
        for path in (ROOT / top).rglob("*"):
            if (path.is_dir() or path.suffix in (".py", ".pyc")
                    or "__pycache__" in path.parts):
                continue
            package = ".".join(path.parent.relative_to(ROOT).parts)
            assert package in packages, f"{path} is in a directory without __init__.py"
            if not any(fnmatch.fnmatch(path.name, pattern) for pattern in data.get(package, ())):
                missing.append(str(path.relative_to(ROOT)))
    assert not missing, f"not package data: {missing}"


def test_the_bundled_examples_are_readable_through_importlib_resources():
    for name in examples.NAMES:
        assert examples.read_text(name).strip()
    with examples.as_file("logins.csv") as path:
        assert path.read_text().startswith("user,ts,tag")


def test_version_is_one_string_everywhere():
    assert PYPROJECT["project"]["name"] == "qre-monitor"
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "qre._version.__version__"}
    assert qre.__version__.count(".") == 2
    done = subprocess.run([sys.executable, "-m", "qre", "--version"], capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == f"qre {qre.__version__} (distribution qre-monitor)"
