# Two commands do everything on a fresh machine with Python 3.11:
#   make lab    create .venv, install, open the course in JupyterLab
#   make test   create .venv, install, run the unit tests and every notebook (nbval)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup lab test bench bench-gpu clean

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info[:2] >= (3, 11), "Python 3.11 or newer needed, found " + sys.version'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,lab]"
	touch $(STAMP)

setup: $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

test: $(STAMP)
	$(BIN)/python -m pytest

# On a machine with an NVIDIA GPU: check and time every step at the article's config.
bench: $(STAMP)
	$(BIN)/python -m fastlstm_lib bench --config article --out data/results/ladder-$$(date +%Y%m%d).json

clean:
	rm -rf $(VENV) .pytest_cache
