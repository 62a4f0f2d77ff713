# Two commands do everything on a fresh machine with Python 3.11, 3.12 or 3.13:
#   make lab    create .venv, install, open the course in JupyterLab (as a user or as root)
#   make test   create .venv, install, run the unit tests and every notebook (nbval)
# Another Python: make test PYTHON=python3.13. JupyterLab's own options: make lab LAB_ARGS="--ip=0.0.0.0"
# (a container whose port is published). On Windows, run make from Git Bash.
ifeq ($(OS),Windows_NT)
PYTHON ?= python
BIN    := .venv/Scripts
else
PYTHON ?= $(shell command -v python3.11 || command -v python3.12 || command -v python3.13 || command -v python3)
BIN    := .venv/bin
endif
VENV   := .venv
STAMP  := $(VENV)/.installed
# JupyterLab refuses to start as root (Docker, cloud VMs) unless told that it is meant.
ALLOW_ROOT := $(shell [ "$$(id -u 2>/dev/null)" = 0 ] && echo --allow-root)
LAB_ARGS ?=

.PHONY: setup lab test test-fake-gpu-notebooks bench clean

$(STAMP): pyproject.toml
	$(PYTHON) fastlstm_lib/requirements.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,lab]"
	touch $(STAMP)

setup: $(STAMP)

lab: $(STAMP)
	$(BIN)/python -m jupyter lab $(ALLOW_ROOT) $(LAB_ARGS) notebooks/

# Two workers (pytest-xdist), each notebook and test file whole in one of them (--dist loadfile).
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile

# The GPU-only cells of the GPU notebooks, executed on the fake GPU (Linux; no GPU needed; outputs
# not compared, nothing computed: see fastlstm_lib/fakegpu). CI runs it for Colab's T4 after
# `make test`; FAKE_GPU=H100 (or A100, L4, M40) for another. About a minute per notebook.
FAKE_GPU ?= T4
GPU_NOTEBOOKS := $(wildcard notebooks/0[2-9]_*.ipynb notebooks/1[012]_*.ipynb notebooks/4[12]_*.ipynb)
test-fake-gpu-notebooks: $(STAMP)
	$(BIN)/python -m fastlstm_lib.fakegpu notebooks --gpu $(FAKE_GPU) $(GPU_NOTEBOOKS)

# On a machine with an NVIDIA GPU, nothing else running: every measurement the notebooks read,
# under data/results/ (see data/results/README.md): the ladder, issue vs GPU time, Keras' LSTM
# three ways (TF32 off), our GEMM against cuBLAS (needs torch), the batch sweep, the backward
# ladder against Keras on cuDNN, the CNN layouts and data feeding. Without TensorFlow:
# KERAS_BACKEND=torch make bench.
bench: $(STAMP)
	$(BIN)/python -m fastlstm_lib bench --config article --out data/results/ladder-$$(date +%Y%m%d).json --plot data/results/ladder-$$(date +%Y%m%d).png
	$(BIN)/python -m fastlstm_lib clocks --config article --out data/results/clocks-$$(date +%Y%m%d).json
	$(BIN)/python -m fastlstm_lib bench --config article --steps keras_cudnn keras_generic keras_recurrent_dropout --tf32 off --out data/results/keras-$$(date +%Y%m%d).json
	$(BIN)/python -m fastlstm_lib gemm --out data/results/gemm-vs-cublas-$$(date +%Y%m%d).json
	$(BIN)/python -m fastlstm_lib sweep --config article --steps wavefront persistent keras_cudnn --batches 1 4 16 64 --tf32 off --out data/results/batch-sweep-$$(date +%Y%m%d).json
	$(BIN)/python -m fastlstm_lib.backward --config article --out data/results/backward-$$(date +%Y%m%d).json
	$(BIN)/python -m fastlstm_lib.cnn --out data/results/cnn-layouts-$$(date +%Y%m%d).json
	$(BIN)/python -m fastlstm_lib.feeding --out data/results/feeding-$$(date +%Y%m%d).json

clean:
	rm -rf $(VENV) .pytest_cache
