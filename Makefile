# Two commands from a fresh clone: `make demo` and `make test`. Each builds what it needs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.stamp-$(shell cat requirements.txt requirements-dev.txt setup.py | sha1sum | cut -c1-12)
PYTEST_ARGS ?=
# The client core: what must stay httpx-only and type-clean.
CLIENT_CORE := sequence_ai_ros/__init__.py sequence_ai_ros/client

.PHONY: all venv test lint demo bench reliability clean

all: test

venv: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt setup.py
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), \
		"the ROS 2 wheels on PyPI are built for CPython 3.11; set PYTHON=python3.11"'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	@rm -f $(VENV)/.stamp-* && touch $@

lint: venv
	$(PY) -m ruff check .
	$(PY) -m mypy $(CLIENT_CORE)
	$(VENV)/bin/vermin --no-tips --violations --eval-annotations -t=3.10- sequence_ai_ros test bench scripts setup.py

# pytest exits 5 when it collects nothing; that is not a failure of the code under test.
test: lint
	$(PY) -m pytest test -q -raR $(PYTEST_ARGS) || { rc=$$?; [ $$rc -eq 5 ] && echo 'no tests collected' || exit $$rc; }

demo: venv
	$(PY) -m sequence_ai_ros.cli demo $(DEMO_ARGS)

bench: venv
	$(PY) bench/run_all.py

# Rerun every fault test and rewrite docs/RELIABILITY.md from what they measured.
reliability: venv
	$(PY) scripts/reliability_matrix.py

# The chaos soak: SOAK_MINUTES of randomized faults over one node; its section of RELIABILITY.md.
SOAK_MINUTES ?= 20
SOAK_SEED ?= 1
.PHONY: soak
soak: venv
	$(PY) scripts/soak.py --minutes $(SOAK_MINUTES) --seed $(SOAK_SEED) --doc docs/RELIABILITY.md

clean:
	rm -rf $(VENV) build install log .pytest_cache .mypy_cache .ruff_cache
