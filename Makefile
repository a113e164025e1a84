# The two entry points of README.md. Both run scripts/bootstrap.sh first: it checks
# for Java (installing it if missing), creates .venv and installs the project.

PYTHON := .venv/bin/python

.PHONY: demo test fuzz wheel-check

demo:
	scripts/bootstrap.sh
	$(PYTHON) -m qre.demo
	$(PYTHON) -m spark_udf.demo

# ruff first (seconds), then the whole suite. pytest exits 5 when it collects no
# tests; that is a failure here too, and says so.
test:
	scripts/bootstrap.sh
	$(PYTHON) -m ruff check .
	$(PYTHON) -m pytest -q; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; fi; \
	exit $$rc

# The fault-and-fuzz suite (tests marked fuzz), twenty times as many examples as in
# `make test`, with new random draws each run: minutes, not part of CI.
fuzz:
	scripts/bootstrap.sh
	QRE_FUZZ_SCALE=20 HYPOTHESIS_PROFILE=dev $(PYTHON) -m pytest -q -m fuzz \
		--hypothesis-show-statistics -p no:cacheprovider tests

# The wheel installed into a fresh virtualenv outside the checkout (also run by .ci/run).
wheel-check:
	scripts/bootstrap.sh
	scripts/wheel_check.sh
