#!/usr/bin/env bash
# Run a command with the GPU machine's Python as the course needs it: bash tools/gpu_env.sh CMD ...
#   bash tools/gpu_env.sh python3 -m pytest -o addopts="" tests     # the test suite on a GPU machine
# tools/gpurun/prepare.py first takes from .gpu-bundle/ what this Python lacks (numba-cuda, Keras,
# libNVVM...; its decisions on stderr and in GPU_ENV_RECORD), then CMD runs with PYTHONPATH (the
# bundle's packages, the repository, tools/; with FASTLSTM_FAKE_GPU set, a rehearsal, also tests/,
# where the fake GPU's package fakegpu is) and CUDA_HOME as prepare.py set them.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHON=${PYTHON:-$(command -v python3 || command -v python)}
WORK=${GPU_RUN_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/fastlstm-gpu.XXXXXX")}
"$PYTHON" tools/gpurun/prepare.py --bundle .gpu-bundle --work "$WORK" --record "${GPU_ENV_RECORD:-$WORK/prepare.json}" >&2
# shellcheck disable=SC1091
[ -f "$WORK/env.sh" ] && . "$WORK/env.sh"
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD:$PWD/tools${FASTLSTM_FAKE_GPU:+:$PWD/tests}"
exec "$@"
