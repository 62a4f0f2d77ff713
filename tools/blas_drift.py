"""Which stored figures move with the CPU's BLAS: run ``make test``'s selection (every notebook under
nbval, every unit test) once per CPU set-up and list each item whose compared output or check moved.

    python tools/blas_drift.py                         # the default set-ups, every notebook and test
    python tools/blas_drift.py notebooks/10_vs_keras_cudnn.ipynb
    python tools/blas_drift.py --setup Haswell:1 --setup Sandybridge:2 --logs /tmp/drift

A set-up is ``FAMILY:THREADS``. FAMILY is the OpenBLAS kernel family that NumPy's OpenBLAS is told to
use (``OPENBLAS_CORETYPE``: Haswell is what an AVX2 machine such as an AMD EPYC or Ryzen gets,
Sandybridge an AVX-only one; ``default`` leaves OpenBLAS's own choice), and oneDNN, TensorFlow's CPU
kernels, is held to the same vector width (``ONEDNN_MAX_CPU_ISA``). THREADS is the thread count of
OpenBLAS, OpenMP and TensorFlow's intra-op pool. The stored outputs were made with this machine's own
family and its thread count, so every set-up here differs from them in at least one of the two; the
defaults differ in both ways, and between them in both too.

Each set-up runs the items with a cache of its own (``FASTLSTM_CACHE``), so nothing computed under
one BLAS is read back under another. A stored output that moves here would move on a learner's
laptop: a notebook should print only the digits that hold there (README, "The notebooks").

Run it by hand, on an otherwise idle machine: it takes one ``make test`` per set-up (about 7 minutes
each on 2 cores). It is not part of the tests or CI: it needs OpenBLAS's runtime kernel choice (the
NumPy wheels' OpenBLAS has it) and nothing else running. The exit status is 1 when anything moved.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Two kernel families, neither this development machine's own (AVX-512), and both thread counts.
DEFAULT_SETUPS = ("Haswell:1", "Sandybridge:2")
#: oneDNN's widest instruction set for each OpenBLAS family: the same machine, seen by both libraries.
ONEDNN_ISA = {"haswell": "AVX2", "zen": "AVX2", "sandybridge": "AVX", "skylakex": "AVX512_CORE",
              "cooperlake": "AVX512_CORE_BF16", "sapphirerapids": "AVX512_CORE_AMX"}
FAILED = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - (.*))?$")
#: Terminal colours, should a plugin print them all the same.
ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: A failure's section in pytest's report, nbval's reason in it, and the lines of its output diff.
SECTION = re.compile(r"^_{3,} (.+?) _{3,}$")
CELL = re.compile(r"^Cell \d+: ")
DIFF = re.compile(r"^\s+[-+] \S")


def parse_setup(text: str) -> tuple[str, int]:
    """``"Haswell:1"`` -> ("Haswell", 1)."""
    if not isinstance(text, str):
        raise TypeError(f"setup: expected a str FAMILY:THREADS such as Haswell:1, got {type(text).__name__} {text!r}")
    if text.count(":") != 1:
        raise ValueError(f"setup: expected FAMILY:THREADS such as Haswell:1, got {text!r}")
    family, threads = text.split(":")
    if not family or not threads.isdigit() or int(threads) < 1:
        raise ValueError(f"setup: expected FAMILY:THREADS with THREADS a whole number >= 1, got {text!r}")
    return family, int(threads)


def environment(family: str, threads: int, cache: Path) -> dict[str, str]:
    """The process environment of one set-up."""
    env = dict(os.environ)
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "ONEDNN_MAX_CPU_ISA"):
        env.pop(name, None)
    if family.lower() != "default":
        env["OPENBLAS_CORETYPE"] = family
        if family.lower() in ONEDNN_ISA:
            env["ONEDNN_MAX_CPU_ISA"] = ONEDNN_ISA[family.lower()]
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TF_NUM_INTRAOP_THREADS"):
        env[name] = str(threads)
    env["FASTLSTM_CACHE"] = str(cache)
    return env


def blas_in_use(env: dict[str, str]) -> str:
    """What NumPy's BLAS says it runs under ``env`` (threadpoolctl), in one line."""
    probe = ("import numpy, threadpoolctl; print('; '.join(f\"{i['internal_api']} {i.get('version')} "
             "{i.get('architecture')} kernels, {i['num_threads']} threads\" for i in threadpoolctl.threadpool_info() "
             "if i['user_api'] == 'blas'))")
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, cwd=ROOT)
    return done.stdout.strip() or f"(could not ask: {done.stderr.strip()[-200:]})"


def run_setup(setup: str, paths: list[str], workers: int, logs: Path) -> tuple[list[tuple[str, str]], str, float, int]:
    """Run ``paths`` under one set-up: (the items that failed with their one-line reasons, the BLAS
    in use, seconds, pytest's exit status). The whole pytest output goes to ``logs/<FAMILY>-<THREADS>.log``."""
    family, threads = parse_setup(setup)
    with tempfile.TemporaryDirectory(prefix="fastlstm-drift-cache-") as cache:
        env = environment(family, threads, Path(cache))
        blas = blas_in_use(env)
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "not tools and not site", "-q", "-rfE", "--color=no"]
        if workers > 1:
            command += ["-n", str(workers), "--dist", "loadfile"]
        log = logs / f"{family}-{threads}.log"
        start = time.perf_counter()
        with open(log, "w") as out:
            status = subprocess.run(command + paths, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT).returncode
        seconds = time.perf_counter() - start
    return failures(log.read_text(errors="replace")), blas, seconds, status


def failures(output: str) -> list[tuple[str, str]]:
    """The failed items of a pytest output, each with a one-line reason: nbval's own ("Cell 5: Cell
    outputs differ") and the first lines of its diff where it printed one, else pytest's summary's."""
    lines = [ANSI.sub("", line) for line in output.splitlines()]
    details: dict[str, str] = {}
    item, cell, diff = None, "", []
    for line in lines + ["___ end ___"]:
        header = SECTION.match(line)
        if header:
            if item is not None:
                details[item] = "; ".join(part for part in [cell] + diff[:2] if part)
            item, cell, diff = header.group(1), "", []
        elif item is not None:
            if not cell and CELL.match(line):
                cell = line.strip()
            elif DIFF.match(line):
                diff.append(" ".join(line.split()))
    found = []
    for line in lines:
        failed = FAILED.match(line)
        if failed:
            reason = details.get(failed.group(1)) or (failed.group(2) or "").strip()
            found.append((failed.group(1), reason[:200]))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", help="notebooks or test files (default: make test's selection)")
    parser.add_argument("--setup", action="append", metavar="FAMILY:THREADS",
                        help=f"an OpenBLAS kernel family and a thread count; repeat (default: {' '.join(DEFAULT_SETUPS)})")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (default 2, as make test)")
    parser.add_argument("--logs", type=Path, default=None, help="folder for each set-up's whole pytest output")
    args = parser.parse_args(argv)
    setups = args.setup or list(DEFAULT_SETUPS)
    for setup in setups:
        try:
            parse_setup(setup)
        except ValueError as error:
            parser.error(str(error))
    if args.workers < 1:
        parser.error(f"--workers: expected a whole number >= 1, got {args.workers}")
    logs = args.logs or Path(tempfile.mkdtemp(prefix="fastlstm-drift-"))
    logs.mkdir(parents=True, exist_ok=True)
    print(f"this machine's BLAS as it is set here: {blas_in_use(dict(os.environ))}")
    print(f"each set-up below against the stored outputs; nothing else should run meanwhile; whole outputs in {logs}")
    any_moved = False
    for setup in setups:
        moved, blas, seconds, status = run_setup(setup, args.paths, args.workers, logs)
        print(f"\n{setup}: {blas} ({seconds:.0f} s)")
        for item, reason in moved:
            print(f"  moved: {item}  {reason}")
        if status not in (0, 1) or (status == 1 and not moved):  # interrupted, or nothing to read: no verdict
            print(f"  pytest exited with status {status} and no failed item to name: see {logs}")
            moved = moved or [("pytest", f"status {status}")]
        elif not moved:
            print("  no compared output or check moved")
        any_moved |= bool(moved)
    print("\n" + ("something moved: print only the digits that hold on any CPU (see each log)" if any_moved
                  else "nothing moved under any set-up"))
    return 1 if any_moved else 0


if __name__ == "__main__":
    sys.exit(main())
