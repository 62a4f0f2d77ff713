#!/usr/bin/env bash
# The GPU run (issue 33): bash tools/gpu_run.sh OUT_DIR [BUDGET_S] [--resume DIR]   (default budget 480 s)
#
# On a lent GPU (at most 10 minutes a command), two calls, the second resuming the first:
#   bash tools/gpu_run.sh "$OUT" 360                       # call 1: gpu-run-1.tar.gz comes back
#   (here: mkdir -p .gpu-run && cp <what came back>/gpu-run-1.tar.gz .gpu-run/; carry .gpu-run too)
#   bash tools/gpu_run.sh "$OUT" 300 --resume .gpu-run     # call 2: only the stages call 1 did not do
# Each call's summary.txt names every stage: done (now or in an earlier call), skipped for a missing
# capability (and why), cut by the budget, or not reached. --help: this text.
#
# One command for a borrowed GPU machine with no internet. From the repository root:
#   1. tools/gpu_env.sh: tools/gpurun/prepare.py (standard library only) takes from .gpu-bundle/
#      (tools/gpu_bundle.sh, carried along) what this Python lacks or holds at another version, and
#      libNVVM if missing;
#   2. python3 -m gpurun (tools/gpurun/supervisor.py) runs the stages in one child process within
#      the budget: smoke, correctness, the ladder, cuDNN, clocks, GEMM vs cuBLAS, the batch sweep,
#      backward, profilers, then Keras' CNN layouts and batch sizes (tools/gpurun/stages.py),
#      writing each stage's JSON under OUT_DIR/results/ as it ends; OUT_DIR/summary.txt names every
#      stage from the start ("not reached", "under way", then how it ended);
#   3. OUT_DIR is packed into this call's OUT_DIR/gpu-run-N.tar.gz (also after every stage), and the
#      loose results removed once the archive holds them: what comes back is summary.txt, log.txt and
#      the archive, whose stages.json a later call's --resume reads.
# A stage has a share of the time (three times its estimate and a minute): one still running past
# it is written "stuck" where it was, its process ends, and a fresh one goes on with the next stage
# (so does one after a crash, e.g. exit 139 inside the driver). At the budget the stage under way is
# written as it stands ("cut") and the process ends (exit 124); one that cannot even do that is
# killed 30 s later. tracebacks.txt says where each thread was.
# Rehearsal without a GPU: FASTLSTM_FAKE_GPU=H100 bash tools/gpu_run.sh /tmp/rehearsal (in a clone:
# the fake GPU is tests/fakegpu, which tools/gpu_env.sh puts on PYTHONPATH when FASTLSTM_FAKE_GPU is set)
set -uo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;; esac
OUT=${1:?usage: bash tools/gpu_run.sh OUT_DIR [BUDGET_S] [--resume DIR]}
BUDGET=${2:-480}
shift $(( $# < 2 ? $# : 2 ))
case "$BUDGET" in ''|*[!0-9]*) echo "error: BUDGET_S must be a whole number of seconds, got '$BUDGET'" >&2; exit 2;; esac
export PYTHON=${PYTHON:-$(command -v python3 || command -v python)}
mkdir -p "$OUT/results"
OUT=$(cd "$OUT" && pwd)
started=$(date +%s)
echo "gpu_run: $(date -u +%FT%TZ) budget ${BUDGET} s, python $("$PYTHON" -V 2>&1) at $PYTHON, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" >>"$OUT/log.txt"
export FASTLSTM_COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} PYTHONUNBUFFERED=1 GPU_ENV_RECORD="$OUT/prepare.json"
# The budget counts from here: prepare.py's unpacking (a few seconds) is inside it.
GPU_RUN_DEADLINE=$(( started + BUDGET )) bash tools/gpu_env.sh bash -c \
  'left=$(( GPU_RUN_DEADLINE - $(date +%s) )); exec timeout -s KILL $(( left + 30 )) "$PYTHON" -m gpurun "$0" --budget "$left" "$@"' \
  "$OUT" "$@" 2>&1 | tee -a "$OUT/log.txt"
status=${PIPESTATUS[0]}
case "$status" in
  0|1|2|124) ;;  # every stage ran (1: one failed), a usage error, or the budget ended the run and it said so
  *)  # the supervisor itself did not end as it should (137: killed 30 s after the budget)
    echo "gpu_run: the run ended with exit $status: see tracebacks.txt" | tee -a "$OUT/log.txt"
    bash tools/gpu_env.sh "$PYTHON" -m gpurun "$OUT" --killed "the run ended with exit $status (137: killed 30 s after the budget)" \
      >>"$OUT/log.txt" 2>&1;;
esac
# Pack once more (the log and summary as they now stand), into this call's archive (never another
# call's); drop the loose results once the archive holds them.
ARCHIVE=$(cat "$OUT/archive_name" 2>/dev/null || echo gpu-run-1.tar.gz)
( cd "$OUT" && tar czf "$ARCHIVE.partial" $(ls -A | grep -v '^gpu-run-') && mv "$ARCHIVE.partial" "$ARCHIVE" ) \
  && tar tzf "$OUT/$ARCHIVE" >/dev/null && rm -rf "$OUT/results" "$OUT/tracebacks.txt" "$OUT/stages.json" "$OUT/archive_name"
echo "gpu_run: exit $status after $(( $(date +%s) - started )) s; unpack with: tar xzf $ARCHIVE -C data/ results;" \
  "resume: copy $ARCHIVE into .gpu-run/ and run again with --resume .gpu-run" | tee -a "$OUT/log.txt"
exit "$status"
