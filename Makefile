# Two commands: `make run` (set up, open the app on the bundled demo) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# The real Hermes 0.19.0, the oracle of the differential tests, in an environment of its own: it pins
# many dependencies, and the main environment must keep testing our stand-ins of its modules.
HERMES_VENV  ?= .venv-hermes
HERMES_STAMP := $(HERMES_VENV)/.installed
HERMES_PIN   := hermes-agent==0.19.0

.PHONY: run test lint demo bench clean hermes-env

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) -m compileall -q inspector plugins  # workers see the tree read-only (inspector/worker/bytecode.py)
	touch $(STAMP)

# A failed install leaves its reason in $(HERMES_VENV)/.failed; the differential tests skip with it.
$(HERMES_STAMP):
	rm -f $(HERMES_VENV)/.failed
	( $(PYTHON) -m venv $(HERMES_VENV) && $(HERMES_VENV)/bin/python -m pip install --quiet '$(HERMES_PIN)' ) \
	  > $(HERMES_VENV).log 2>&1 && touch $(HERMES_STAMP) \
	  || { mkdir -p $(HERMES_VENV); tail -5 $(HERMES_VENV).log > $(HERMES_VENV)/.failed; \
	       echo "note: $(HERMES_PIN) could not be installed; the differential tests will skip"; }

hermes-env: $(HERMES_STAMP)

run: $(STAMP)
	$(VENV)/bin/context-inspector

test: $(STAMP) $(HERMES_STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest
	$(VENV)/bin/ruff check inspector plugins tests resources

lint: $(STAMP)
	$(VENV)/bin/ruff check inspector plugins tests resources

demo: $(STAMP)
	$(PY) resources/make_demo.py

bench: $(STAMP)
	$(PY) -m inspector.bench.host_bench

clean:
	rm -rf $(VENV) $(HERMES_VENV) $(HERMES_VENV).log .pytest_cache .ruff_cache
