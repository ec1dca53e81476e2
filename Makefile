# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
# Both create the development environments first when they are missing or stale:
#   .venv        the Relay leg: Python 3.10, hhb-tvm (TVM 0.16, with Relay and an early Relax)
#   .venv-relax  the Relax leg: Python 3.11, apache-tvm 0.27 (Relax, no Relay) and PyTorch 2.13 (CPU)

VENV      := .venv
PY        := $(VENV)/bin/python
STAMP     := $(VENV)/.installed
# Relay exists only in TVM <= 0.19; its PyPI build (hhb-tvm, TVM 0.16) has wheels for CPython 3.8 and 3.10.
VENV_RELAX  := .venv-relax
PY_RELAX    := $(VENV_RELAX)/bin/python
STAMP_RELAX := $(VENV_RELAX)/.installed
# apache-tvm 0.27 has wheels for CPython 3.10+; the CPU torch 2.13.0 wheel on this machine is for 3.11.
RELAX_PYTHON_VERSION := 3.11
PYTEST_ARGS ?=
SHELL       := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
# pip's notes about this machine's local index mirrors are noise; keep real errors.
QUIET_PIP   := { grep -v "is ignored: it is neither a file nor a directory" || true; }

.PHONY: setup system-packages demo lint docs pictures test bench fuzz scale schema snapshots web clean

setup: $(STAMP) $(STAMP_RELAX) system-packages

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
	$(PY) -m pip install --quiet -c constraints.txt -r requirements-relay.txt -e ".[test,all,lint]" 2>&1 | $(QUIET_PIP)
	$(PY) -c "import tvm, tvm.relay, relayviz_instrument; print('tvm', tvm.__version__, 'with Relay: ok')"
	@touch $(STAMP)

$(STAMP_RELAX): setup.cfg pyproject.toml constraints-relax.txt requirements-relax.txt
	@test -x $(PY_RELAX) || { py="$$(tools/find-python $(RELAX_PYTHON_VERSION))"; echo "creating $(VENV_RELAX) with $$py"; "$$py" -m venv $(VENV_RELAX); }
	$(PY_RELAX) -m pip install --quiet -c constraints-relax.txt -r requirements-relax.txt -e ".[test,all,docs]" 2>&1 | $(QUIET_PIP)
	$(PY_RELAX) -c "import tvm, tvm.relax, torch, relayviz_instrument; print('tvm', tvm.__version__, 'with Relax, torch', torch.__version__ + ': ok')"
	@touch $(STAMP_RELAX)

demo: setup
	$(VENV)/bin/relayviz demo

# ruff and mypy as pyproject.toml configures them, in the Relay leg's environment (the `lint`
# extra); `make test`, hence CI, runs it first.
lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy

# The user manual (docs/), built by Sphinx into build/docs/ in the Relax leg's environment (Sphinx 9
# needs Python 3.11; the `docs` extra). Warnings are errors: a broken link, a page in no table of
# contents or a docstring autodoc cannot read fails the build, hence `make test` and CI.
docs: $(STAMP_RELAX)
	$(PY_RELAX) -m sphinx -W --keep-going -q -b html docs build/docs
	@echo "the manual: build/docs/index.html"

# The README's and the manual's images (docs/images/), from a traced relay.build of the MLP: the
# terminal output recorded by rich, the HTML report screenshot by Chromium. Commit the result.
pictures: setup
	$(PY) tools/make-pictures

# The suite runs in both legs (tests that need one IR are skipped, with the reason, in the
# other), at the same time, one per core: the Relax leg's output follows the Relay leg's, and
# the last lines say how many tests ran in each.
test: setup lint docs
	@logs="$$(mktemp -d)"; status=0; \
	$(PY_RELAX) -m pytest $(PYTEST_ARGS) > "$$logs/relax" 2>&1 & relax=$$!; \
	echo "== Relay leg ($(VENV)) =="; \
	$(PY) -m pytest $(PYTEST_ARGS) 2>&1 | tee "$$logs/relay" || status=1; \
	wait $$relax || status=1; \
	echo "== Relax leg ($(VENV_RELAX)) =="; \
	cat "$$logs/relax"; \
	PYTHON=$(PY) tools/test-legs-summary "Relay=$$logs/relay" "Relax=$$logs/relax"; \
	rm -rf "$$logs"; exit $$status

# Long runs, kept out of `make test`.
bench: setup
	$(PY) benchmarks/bench_serialize.py
	$(PY) benchmarks/bench_capture.py
	$(PY) benchmarks/bench_events.py
	$(PY) benchmarks/bench_small.py --modules 200 --repeat 3
	$(PY) benchmarks/bench_diff.py
	$(PY) benchmarks/bench_html.py
	$(PY) benchmarks/bench_export.py
	$(PY_RELAX) benchmarks/bench_relax.py
	$(PY) benchmarks/bench_reproducer.py --repeat 3

# Regenerate the golden regression snapshots (snapshots/test_regression/) after an intended change;
# `make test` checks them. Review the files' diff before committing it.
snapshots: setup
	$(PY) -m pytest tests/test_regression.py --snapshot-update $(PYTEST_ARGS)

# Rebuild the HTML report's viewer (relayviz_instrument/html_report/assets/) from web/ with the
# npm packages pinned in web/package-lock.json. The built files are committed: pip needs no npm.
web:
	cd web && npm ci --no-audit --no-fund && npm run build

# Bad input: hypothesis with 5,000 inputs a test, then the atheris target for FUZZ_SECONDS
# (libFuzzer prints "Done N runs"; an input that lets a foreign exception out is written to
# build/fuzz-crashes/ and fails the target).
FUZZ_SECONDS ?= 600
fuzz: setup
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -p no:cacheprovider -m "not slow" tests/test_format.py \
	  tests/test_graph_json.py tests/test_fuzz_readers.py $(PYTEST_ARGS)
	mkdir -p build/fuzz-crashes
	test -d build/fuzz-corpus || $(PY) fuzz/fuzz_readers.py --make-corpus build/fuzz-corpus
	$(PY) fuzz/fuzz_readers.py -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=build/fuzz-crashes/ build/fuzz-corpus

# The largest inputs (100,000 lets, 1,000,000 nodes): time and peak memory of each stage.
scale: setup
	$(PY) benchmarks/bench_scale.py

# Regenerate the shipped JSON Schema from the kind tables in relayviz_instrument/format/kinds.py.
schema: setup
	$(PY) -c "from relayviz_instrument.format.schema import write_schema; write_schema()"

clean:
	rm -rf $(VENV) $(VENV_RELAX) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache relayviz-trace test-artifacts
