# Two commands do everything on a fresh machine with Python 3.11:
#   make lab    create .venv, install, open the course in JupyterLab
#   make test   create .venv, install, run the unit tests and every notebook (nbval)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup lab test bench clean

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

# On a machine with an NVIDIA GPU: check and time every step at the article's config (JSON and
# chart under data/results/), Keras' LSTM three ways (TF32 off), our GEMM against cuBLAS (needs
# torch) on the article's shapes, and the persistent kernel across batch sizes. Without
# TensorFlow: KERAS_BACKEND=torch make bench.
bench: $(STAMP)
	$(BIN)/python -m fastlstm_lib bench --config article --out data/results/ladder-$$(date +%Y%m%d).json --plot data/results/ladder-$$(date +%Y%m%d).png
	$(BIN)/python -m fastlstm_lib bench --config article --steps keras_cudnn keras_generic keras_recurrent_dropout --tf32 off --out data/results/keras-$$(date +%Y%m%d).json
	$(BIN)/python -m fastlstm_lib gemm --out data/results/gemm-vs-cublas-$$(date +%Y%m%d).json
	$(BIN)/python -m fastlstm_lib sweep --config article --steps wavefront persistent keras_cudnn --batches 1 4 16 64 --out data/results/batch-sweep-$$(date +%Y%m%d).json

clean:
	rm -rf $(VENV) .pytest_cache
