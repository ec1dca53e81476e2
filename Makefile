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

.PHONY: setup chromium demo test bench fuzz scale schema web clean

setup: $(STAMP) chromium

# The browser tests of the HTML report drive Debian's Chromium (Playwright from PyPI talks to it;
# Playwright's own browser download is never used).
CHROMIUM ?= /usr/bin/chromium
chromium:
	@test -x $(CHROMIUM) || { echo "installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

$(STAMP): setup.cfg pyproject.toml constraints.txt requirements-relay.txt
	@test -x $(PY) || { py="$$(tools/find-python 3.10)"; echo "creating $(VENV) with $$py"; "$$py" -m venv $(VENV); }
	$(PY) -m pip install --quiet -c constraints.txt -r requirements-relay.txt -e ".[test]" 2>&1 | $(QUIET_PIP)
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
	$(PY) benchmarks/bench_reproducer.py --repeat 3

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
	rm -rf $(VENV) build *.egg-info .pytest_cache relayviz-trace test-artifacts
