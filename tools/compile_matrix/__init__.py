"""The compile matrix: every CUDA kernel of the library, built for every GPU architecture the
course meets (sm_52 to sm_90), and what the compiler made of it: registers, spills, shared
memory and the instruction mix of its main loop. No GPU needed, only pip's CUDA compilers.
A tool of the course's authors and of its tests, not of the learner's package: the library reads
what it writes (``fastlstm_lib.course.sass``: ``read_table``, the listings), and never imports it.

    PYTHONPATH=tools python -m compile_matrix --out data/kernel_resources.csv   # regenerate
    PYTHONPATH=tools python -m compile_matrix --check                           # exit 1 if stale

For each architecture a worker process compiles every kernel to PTX (``jobs``), ptxas assembles
it as the driver would and reports its resources (``toolkits``), and the cubin is disassembled to
count its main loop's instructions (``sass``).
Results are cached under ``.cache/compile_matrix/``, keyed by a hash of the kernels' sources, the
matrix's own code and the compilers' versions: with nothing changed, a run only reads the cache.
The table (and each SASS listing) records that key in its header: ``--check`` says it is current
when its key is today's, without compiling (the sources and compilers it was built from are the
ones here, and the build is deterministic); ``committed_rows`` reads it back as ``build`` returns it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from fastlstm_lib.course.sass import LISTED, LISTINGS, TABLE, read_table  # what it writes, as the library reads it

from .sass import (LOOP_COLUMNS, disassembly, int64_multiplies_divides, load_use_distance, loop_ffma_chain, main_loop_mix,
                   main_loop_text, parse_nvdisasm, slab_mix, staged_loads, staging_per_float)
from .toolkits import ARCHS, arch_name, assemble, resources, toolkit_of, version_line, versions

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools"
CACHE = ROOT / ".cache" / "compile_matrix"
COMMAND = "PYTHONPATH=tools python -m compile_matrix --out data/kernel_resources.csv"
#: Files whose content decides the table (besides the compilers): the kernels, the chip data the
#: persistent kernel is planned with, the instruction classes the loop mix counts by, and the
#: matrix's own modules.
SOURCES = ("fastlstm_lib/kernels/**/*.py", "fastlstm_lib/gpus.py", "data/gpus.csv", "fastlstm_lib/course/sass.py",
           "tools/compile_matrix/*.py")

#: column -> what it holds (the table's header says it too).
COLUMNS = {
    "kernel": "the kernel (persistent_bN: the persistent kernel planned for batch N)",
    "arch": "the GPU architecture it is built for",
    "registers": "registers per thread (ptxas -v)",
    "max_registers": "the register cap it is built with (--maxrregcount), empty for none",
    "spill_stores": "bytes of spill stores per thread",
    "spill_loads": "bytes of spill loads per thread",
    "stack_frame": "bytes of stack frame (local memory) per thread",
    "static_shared": "bytes of static shared memory per block (the persistent kernel's is dynamic)",
    "instructions": "SASS instructions of the whole kernel",
    "loop_instructions": "SASS instructions in the main loop's body (innermost loop with the most FFMAs; 0: no loop)",
    "loop_ffma": "of which FFMA",
    "loop_shared_loads": "of which loads from shared memory (LDS, any width)",
    "loop_global_loads": "of which loads from global memory (LDG, LD)",
    "loop_local": "of which local-memory loads and stores (LDL, STL: spills)",
    "loop_integer": "of which integer and address arithmetic (IMAD, IADD3, LEA, SHF, LOP3, ISETP, XMAD...)",
    "loop_barriers": "of which block barriers (BAR)",
    "staged_loads": "global loads in flight per copy to shared memory: the longest run of loads ended by a shared store (compile_matrix.sass.staged_loads)",
    "slab_instructions": "a blocked GEMM's instructions per slab of K, inner loops times their trips (compile_matrix.sass.slab_mix)",
    "slab_ffma": "of which FFMA",
    "slab_ffma_after_load": "of which FFMA issued after the next slab's first global load, before the barrier (compile_matrix.sass.ffma_after_load): the FFMAs that overlap its loads",
    "loop_ffma_chain": "the longest chain of dependent FFMAs in one trip of the main loop (compile_matrix.sass.loop_ffma_chain): its FFMA latency is paid that often per trip unless other work fills it",
    "staging_instructions_per_float": "instructions per float copied from global to shared memory, in the copy the kernel runs most often (compile_matrix.sass.staging_per_float; the persistent kernels' staging of h at every step): what staging costs besides the loads' latency",
    "int64_multiplies_divides": "64-bit integer multiplies and integer divisions and remainders in the kernel's PTX (compile_matrix.sass.int64_multiplies_divides): 0 where every index is 32-bit arithmetic",
    "load_use_distance": "the fewest instructions a thread issues from a global load to the first use of what it loaded, in the loop that feeds the main loop, around to its next trip (compile_matrix.sass.load_use_distance): memory latency a warp hides by itself",
    "layout": "its array arguments' layouts as compiled, in order: C (C-contiguous, as the article-size launches pass them) or A (any stride)",
    "what": "the variant",
}


def cache_key() -> str:
    """A hash of everything the table depends on: ``SOURCES``' contents and the compilers' versions."""
    digest = hashlib.sha256(json.dumps(versions(), sort_keys=True).encode())
    for pattern in SOURCES:
        for path in sorted(ROOT.glob(pattern)):
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def build_arch(cc: tuple[int, int], where: Path) -> list[dict]:
    """Compile, assemble and disassemble every kernel for ``cc`` in ``where``; the table's rows."""
    from .jobs import command

    argv, env = command(cc, where)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1200, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"compiling the kernels for {arch_name(cc)} failed:\n{done.stderr[-4000:]}")
    rows = []
    for name, job in json.loads((where / "manifest.json").read_text()).items():
        cubin = where / f"{name}.cubin"
        report = assemble(where / f"{name}.ptx", cc, cubin, relocatable=job["relocatable"],
                          max_registers=job["max_registers"])
        (where / f"{name}.ptxas.txt").write_text(report)
        counts = resources(report, job["entry"])
        listing = disassembly(cubin, cc)
        code = None if listing is None else parse_nvdisasm(listing, job["entry"])
        loop = main_loop_mix(code)
        rows.append({"kernel": name, "arch": arch_name(cc), "max_registers": job["max_registers"] or "",
                     **counts, **loop, "staged_loads": staged_loads(code), **slab_mix(code, job.get("trips")),
                     "loop_ffma_chain": loop_ffma_chain(code), "load_use_distance": load_use_distance(code),
                     "staging_instructions_per_float": staging_per_float(code),
                     "int64_multiplies_divides": int64_multiplies_divides((where / f"{name}.ptx").read_text()),
                     "layout": job["layout"], "what": job["what"]})
        if (name, arch_name(cc)) in LISTED:
            rows[-1]["sass"] = main_loop_text(listing, job["entry"])
    (where / "rows.json").write_text(json.dumps(rows, indent=1))
    return rows


def cached_rows(cc: tuple[int, int], cache: Path, key: str) -> list[dict]:
    """The rows for ``cc``: from the cache when its key matches, else built (and cached)."""
    final = cache / key / arch_name(cc)
    if (final / "rows.json").exists():
        return json.loads((final / "rows.json").read_text())
    final.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{arch_name(cc)}-", dir=final.parent))
    try:
        rows = build_arch(cc, scratch)
        try:
            os.replace(scratch, final)
        except OSError:  # another run finished it meanwhile
            pass
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return rows


def build(cache: Path = CACHE, workers: int | None = None, archs=None) -> list[dict]:
    """Every row of the table, kernels in the inventory's order, each over the architectures
    (``archs``: a subset of ``ARCHS``' keys, e.g. [(9, 0)]; default all of them)."""
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive int or None, got {workers!r}")
    chosen = list(ARCHS) if archs is None else list(archs)
    if not chosen or any(cc not in ARCHS for cc in chosen):
        raise ValueError(f"archs must be a non-empty list of {sorted(ARCHS)}, got {archs!r}")
    from fastlstm_lib.runtime.numba_compat import require_numba_cuda

    require_numba_cuda("the compile matrix")  # it compiles with numba-cuda's real path, never the simulator
    key = cache_key()
    cache = Path(cache)
    for old in cache.glob("*") if cache.exists() else []:
        if old.name != key:  # results of other sources or compilers: stale
            shutil.rmtree(old, ignore_errors=True)
    # Start the biggest share first: sm_52's worker is the only CUDA 12 one.
    archs = sorted(chosen, key=lambda cc: toolkit_of(cc) != "12")
    with concurrent.futures.ThreadPoolExecutor(workers or os.cpu_count() or 1) as pool:
        per_arch = dict(zip(archs, pool.map(lambda cc: cached_rows(cc, cache, key), archs)))
    ordered = [cc for cc in ARCHS if cc in per_arch]
    return [per_arch[cc][i] for i in range(len(per_arch[ordered[0]])) for cc in ordered]


#: The header line that records the key (``cache_key``) of the sources and compilers a table was built from.
KEY_LINE = "# Built from sources and compilers with key "


def render(rows: list[dict], key: str | None = None) -> str:
    """The table as committed: a ``#`` header (columns, compilers, the key of what it was built
    from, the command), then CSV."""
    if not isinstance(rows, list) or not rows:
        raise ValueError("rows must be a non-empty list of dicts")
    header = ["# Every CUDA kernel of fastlstm_lib, compiled for each GPU architecture without a GPU:",
              f"# {version_line()}.", f"{KEY_LINE}{key or cache_key()} (compile_matrix.cache_key).",
              "# ptxas -O3 as the driver's JIT does; the persistent kernel with -c (its grid barrier calls the",
              "# device runtime) and its register cap. Main loop: see tools/compile_matrix/sass.py.",
              "# sm_52 has no SASS columns: no disassembler on PyPI reads it (nvdisasm 13 dropped Maxwell).",
              f"# Regenerate: {COMMAND}  (checked by tests/test_compile_matrix.py)"]
    header += [f"#   {column}: {meaning}" for column, meaning in COLUMNS.items()]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(COLUMNS), lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return "\n".join(header) + "\n" + out.getvalue()


def listings(rows: list[dict], where: Path = LISTINGS, key: str | None = None) -> dict[Path, str]:
    """The SASS files to commit: ``where``/KERNEL.ARCH.sass, the main loop of each ``LISTED`` row."""
    found = {}
    key = key or cache_key()
    for row in rows:
        if "sass" in row:
            header = (f"# {row['kernel']} ({row['what']}) on {row['arch']}: its main loop, {row['loop_instructions']}"
                      f" instructions. {version_line()}. Regenerate: {COMMAND}\n{KEY_LINE}{key}.\n")
            found[Path(where) / f"{row['kernel']}.{row['arch']}.sass"] = header + row["sass"]
    return found


def recorded_key(path: Path = TABLE) -> str | None:
    """The key a table (or a SASS listing) records, or None where it records none."""
    text = Path(path).read_text() if Path(path).exists() else ""
    for line in text.splitlines():
        if line.startswith(KEY_LINE):
            return line[len(KEY_LINE):].split()[0].rstrip(".")
    return None


def committed_rows(path: Path = TABLE, where: Path = LISTINGS) -> list[dict]:
    """The committed table read back as ``build`` returns it: numbers as ints (a ratio as a float; ""
    where empty), and each listed row's SASS from its file."""
    rows = []
    for row in read_table(path):
        row = {column: (value if column in ("kernel", "arch", "layout", "what") or value == ""
                        else float(value) if "." in value else int(value))
               for column, value in row.items()}
        if (row["kernel"], row["arch"]) in LISTED:
            listing = (Path(where) / f"{row['kernel']}.{row['arch']}.sass").read_text()
            row["sass"] = "".join(line + "\n" for line in listing.splitlines() if not line.startswith("#"))
        rows.append(row)
    return rows


def stale(out: Path, where: Path) -> list[str]:
    """What is not current: the table or a listing that is missing or records another key than today's."""
    key = cache_key()
    paths = [Path(out)] + [Path(where) / f"{kernel}.{arch}.sass" for kernel, arch in sorted(LISTED)]
    return [str(path) for path in paths if recorded_key(path) != key]


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--out PATH`` writes the table, ``--check`` compares it with ``--out``'s file."""
    parser = argparse.ArgumentParser(prog="python -m compile_matrix", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=TABLE, help="the table (default: data/kernel_resources.csv)")
    parser.add_argument("--check", action="store_true", help="write nothing, compile nothing; exit 1 when the "
                        "table or a listing was built from other sources or compilers than today's")
    parser.add_argument("--cache", type=Path, default=CACHE, help="where compiled kernels are kept")
    parser.add_argument("--workers", type=int, default=None, help="parallel compilations (default: CPU count)")
    args = parser.parse_args(argv)
    if args.check:  # no compiling: the keys of what each file was built from against today's
        outdated = stale(args.out, args.out.parent / LISTINGS.name)
        if outdated:
            print(f"{', '.join(outdated)}: stale (built from other sources or compilers): regenerate with `{COMMAND}`",
                  file=sys.stderr)
            return 1
        print(f"{args.out} is current")
        return 0
    rows = build(args.cache, args.workers)
    text = render(rows)
    sass = listings(rows, args.out.parent / LISTINGS.name)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    for path, listing in sass.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(listing)
    print(f"wrote {args.out} ({len(text.splitlines())} lines) and {len(sass)} SASS listings")
    return 0

