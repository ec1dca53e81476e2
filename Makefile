# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
# Both create the development environment (.venv) first when it is missing or stale.

VENV      := .venv
PY        := $(VENV)/bin/python
STAMP     := $(VENV)/.installed
# Relay exists only in TVM <= 0.19; its PyPI build (hhb-tvm, TVM 0.16) has wheels for CPython 3.8 and 3.10.
PYTEST_ARGS ?=
SHELL       := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
# pip's notes about this machine's local index mirrors are noise; keep real errors.
QUIET_PIP   := { grep -v "is ignored: it is neither a file nor a directory" || true; }

.PHONY: setup system-packages demo test bench fuzz schema snapshots web clean

setup: $(STAMP) system-packages

# --- Debian packages the tests use -------------------------------------------------------------
# GraphViz's dot renders `relayviz export --to svg`; the browser tests (the HTML report, and the
# Model Explorer view) drive Debian's Chromium through Playwright from PyPI, whose own browser
# download is never used. Checked on every `make setup`; installed with apt-get when missing (as
# root), else the command to run is printed.
SYSTEM_PACKAGES := $(if $(shell command -v dot),,graphviz) $(if $(wildcard /usr/bin/chromium),,chromium)
system-packages:
	@if [ -n "$(strip $(SYSTEM_PACKAGES))" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian's $(strip $(SYSTEM_PACKAGES)) for the tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSTEM_PACKAGES) >/dev/null; \
	  else echo "note: install $(strip $(SYSTEM_PACKAGES)) (Debian/Ubuntu: sudo apt-get install$(SYSTEM_PACKAGES)) for the svg and browser tests"; fi; \
	fi
# ----------------------------------------------------------------------------------------------

$(STAMP): setup.cfg pyproject.toml constraints.txt requirements-relay.txt
	@test -x $(PY) || { py="$$(tools/find-python 3.10)"; echo "creating $(VENV) with $$py"; "$$py" -m venv $(VENV); }
	$(PY) -m pip install --quiet -c constraints.txt -r requirements-relay.txt -e ".[test,all]" 2>&1 | $(QUIET_PIP)
	$(PY) -c "import tvm, tvm.relay, relayviz_instrument; print('tvm', tvm.__version__, 'with Relay: ok')"
	@touch $(STAMP)

demo: setup
	$(VENV)/bin/relayviz demo

test: setup
	$(PY) -m pytest $(PYTEST_ARGS)

# Long runs, kept out of `make test`.
bench: setup
	$(PY) benchmarks/bench_serialize.py
	$(PY) benchmarks/bench_capture.py
	$(PY) benchmarks/bench_diff.py
	$(PY) benchmarks/bench_html.py
	$(PY) benchmarks/bench_export.py

# Regenerate the golden regression snapshots (snapshots/test_regression/) after an intended change;
# `make test` checks them. Review the files' diff before committing it.
snapshots: setup
	$(PY) -m pytest tests/test_regression.py --snapshot-update $(PYTEST_ARGS)

# Rebuild the HTML report's viewer (relayviz_instrument/html_report/assets/) from web/ with the
# npm packages pinned in web/package-lock.json. The built files are committed: pip needs no npm.
web:
	cd web && npm ci --no-audit --no-fund && npm run build

fuzz: setup
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -m "not slow" tests/test_format.py $(PYTEST_ARGS)

# Regenerate the shipped JSON Schema from the kind tables in relayviz_instrument/format/kinds.py.
schema: setup
	$(PY) -c "from relayviz_instrument.format.schema import write_schema; write_schema()"

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache relayviz-trace test-artifacts
