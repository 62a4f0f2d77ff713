# Two commands do everything on a fresh machine with Python 3.11, 3.12 or 3.13:
#   make lab    create .venv, install, open the course in JupyterLab (as a user or as root)
#   make test   create .venv, install, run the unit tests and every notebook (nbval)
#   make site   the course as a website in _build/site/ (open _build/site/index.html)
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
SITE_STAMP := $(VENV)/.site-installed
# JupyterLab refuses to start as root (Docker, cloud VMs) unless told that it is meant.
ALLOW_ROOT := $(shell [ "$$(id -u 2>/dev/null)" = 0 ] && echo --allow-root)
LAB_ARGS ?=

.PHONY: setup lab test test-tools site test-site test-fake-gpu-notebooks bench gpu-bundle gpu-rehearsal clean

$(STAMP): pyproject.toml
	$(PYTHON) fastlstm_lib/setup/requirements.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test,lab]"
	touch $(STAMP)

setup: $(STAMP)

lab: $(STAMP)
	$(BIN)/python -m jupyter lab $(ALLOW_ROOT) $(LAB_ARGS) notebooks/

# The course: the library's tests and every notebook. Two workers (pytest-xdist), each notebook
# and test file whole in one of them (--dist loadfile).
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "not tools and not site"

# The project's own tools and test modes (marked `tools`; Linux, pip's CUDA compilers): the fake
# GPU's tours on five GPUs, the compile matrix against data/kernel_resources.csv, the GPU run's
# rehearsal on a fake H100. CI runs it after `make test`.
test-tools: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -m tools tests

# The course as a website, read without running anything: the stored notebooks (outputs as
# committed), README.md, TEACHING.md and REFERENCES.md, built by Sphinx (site/conf.py; the sidebar in
# site/index.md) into _build/site/ with no network and no warning (-W): open _build/site/index.html.
# A few seconds; the first time it installs the `site` extra (Sphinx, MyST-NB, the theme, playwright).
$(SITE_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[site]"
	touch $(SITE_STAMP)

site: $(SITE_STAMP)
	$(BIN)/python site/build.py

# The website in headless Chromium (tests/test_site.py, marked `site`; CI runs it): it builds its own
# copy. Needs a Chromium: apt-get install -y --no-install-recommends chromium (or python -m
# playwright install chromium); without one it skips and says so.
test-site: $(SITE_STAMP)
	$(BIN)/python -m pytest -m site tests/test_site.py

# The GPU-only cells of the GPU notebooks, executed on the fake GPU (Linux; no GPU needed; outputs
# not compared, nothing computed: see tests/fakegpu, test code run with tests/ on PYTHONPATH). CI
# runs it for Colab's T4 after `make test`; FAKE_GPU=H100 (or A100, L4, M40) for another. About a
# minute per notebook, FAKE_GPU_JOBS (default 2) at a time.
FAKE_GPU ?= T4
FAKE_GPU_JOBS ?= 2
GPU_NOTEBOOKS := $(wildcard notebooks/0[2-9]_*.ipynb notebooks/1[012]_*.ipynb notebooks/4[12]_*.ipynb)
test-fake-gpu-notebooks: $(STAMP)
	PYTHONPATH=$(CURDIR)/tests $(BIN)/python -m fakegpu notebooks --gpu $(FAKE_GPU) --jobs $(FAKE_GPU_JOBS) $(GPU_NOTEBOOKS)

# On a machine with an NVIDIA GPU, nothing else running: every measurement the notebooks read, in
# one staged, budgeted command (tools/gpu_run.sh; data/results/README.md): smoke, correctness at
# many blocks, the ladder (plain and CUDA Graphs), cuDNN with the same weights (torch, TF32 off),
# issue vs GPU time, our GEMM vs cuBLAS, the batch sweep, the backward ladder, the profilers. The
# stage files are unpacked into data/results/. Without internet there: make gpu-bundle here first,
# carry .gpu-bundle/ and run `bash tools/gpu_run.sh OUT_DIR` with the machine's python3.
BENCH_BUDGET ?= 900
bench: $(STAMP)
	PYTHON=$(BIN)/python bash tools/gpu_run.sh .gpu-run/$$(date +%Y%m%d) $(BENCH_BUDGET); \
	  status=$$?; tar xzf .gpu-run/$$(date +%Y%m%d)/gpu-run-1.tar.gz -C data/ results; exit $$status

# What the GPU machine may lack (no internet there), into .gpu-bundle/ (<= 40 MiB; needs PyPI).
gpu-bundle:
	bash tools/gpu_bundle.sh

# The GPU run at full size on a fake H100 (no GPU needed; nothing is computed; about 8 minutes).
gpu-rehearsal: $(STAMP)
	FASTLSTM_FAKE_GPU=H100 PYTHON=$(BIN)/python bash tools/gpu_run.sh .gpu-run/rehearsal

clean:
	rm -rf $(VENV) .pytest_cache _build
