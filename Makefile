# Two commands: `make run` (set up, open the app on the bundled demo) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test lint demo bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/context-inspector

test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest
	$(VENV)/bin/ruff check inspector plugins tests resources

lint: $(STAMP)
	$(VENV)/bin/ruff check inspector plugins tests resources

demo: $(STAMP)
	$(PY) resources/make_demo.py

bench: $(STAMP)
	$(PY) -m inspector.bench.host_bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
