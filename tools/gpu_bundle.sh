#!/usr/bin/env bash
# Build .gpu-bundle/ (git-ignored, at most 40 MiB): the wheels and CUDA files the GPU machine may
# lack (no internet there). Needs PyPI. See tools/gpurun/bundle.py. Carry it to the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$(command -v python3 || command -v python)}
exec "$PY" tools/gpurun/bundle.py "$@"
