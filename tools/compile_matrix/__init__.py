"""The compile matrix: every CUDA kernel of the library, built for every GPU architecture the
course meets (sm_52 to sm_90), and what the compiler made of it: registers, spills, shared
memory and the instruction mix of its main loop. No GPU needed, only pip's CUDA compilers.
A tool of the course's authors and of its tests, not of the learner's package: the library reads
what it writes (``fastlstm_lib.course.sass``: ``read_table``, the listings), and never imports it.

    PYTHONPATH=tools python -m compile_matrix --out data/kernel_resources.csv   # regenerate
    PYTHONPATH=tools python -m compile_matrix --check                           # exit 1 if stale

For each architecture a worker process compiles every kernel to PTX (``jobs``), ptxas assembles
it as the driver would and reports its resources (``toolkits``), and the cubin is disassembled to
count its main loop's instructions (``sass``). The blocked GEMMs' shared-memory wavefronts per FFMA
come from the addresses their lanes read, measured once per kernel on Numba's simulator
(``wavefronts``), the same for every architecture.
Each kernel has a key (``keys``): a hash of what decides its machine code, its version file and
the files that imports, the matrix's own code and the compilers' versions. Results are cached
under ``.cache/compile_matrix/ARCH/``, one file per kernel and key: a run compiles only the
kernels whose key changed (with nothing changed, it only reads the cache). Each row of the table
records its kernel's key (its ``key`` column), and each SASS listing its kernel's in its key
line: ``--check`` says which kernels are stale, without compiling (a row is current when its key
is today's: the sources and compilers it was built from are the ones here, and the build is
deterministic), and a commit that changes one kernel changes only its rows and listings.
``committed_rows`` reads the table back as ``build`` returns it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from fastlstm_lib.course.sass import LISTED, LISTINGS, TABLE, read_table  # what it writes, as the library reads it

from .keys import kernel_keys
from .sass import (LOOP_COLUMNS, disassembly, int64_multiplies_divides, load_use_distance, loop_ffma_chain, main_loop_mix,
                   main_loop_text, parse_nvdisasm, slab_mix, staged_loads, staging_per_float)
from .toolkits import ARCHS, arch_name, assemble, resources, toolkit_of, version_line

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools"
CACHE = ROOT / ".cache" / "compile_matrix"
COMMAND = "PYTHONPATH=tools python -m compile_matrix --out data/kernel_resources.csv"
#: column -> what it holds (the table's header says it too).
COLUMNS = {
    "kernel": "the kernel (persistent_bN: the persistent kernel planned for batch N)",
    "arch": "the GPU architecture it is built for (every one, or those its Build's min_cc allows: tf32_gemm from sm_80)",
    "registers": "registers per thread (ptxas -v)",
    "max_registers": "the register cap it is built with (--maxrregcount), empty for none",
    "spill_stores": "bytes of spill stores per thread",
    "spill_loads": "bytes of spill loads per thread",
    "stack_frame": "bytes of stack frame (local memory) per thread",
    "static_shared": "bytes of static shared memory per block (the persistent kernel's is dynamic)",
    "instructions": "SASS instructions of the whole kernel",
    "loop_instructions": "SASS instructions in the main loop's body (innermost loop with the most FFMAs and HMMAs; 0: no loop)",
    "loop_ffma": "of which FFMA",
    "loop_hmma": "of which tensor-core matrix multiply-adds (HMMA: one warp-wide mma.sync each)",
    "loop_shared_loads": "of which loads from shared memory (LDS, any width)",
    "loop_global_loads": "of which loads from global memory (LDG, LD)",
    "loop_local": "of which local-memory loads and stores (LDL, STL: spills)",
    "loop_integer": "of which integer and address arithmetic (IMAD, IADD3, LEA, SHF, LOP3, ISETP, XMAD...)",
    "loop_barriers": "of which block barriers (BAR)",
    "loop_shared_wavefronts_per_ffma": "shared-memory wavefronts (the SM serves one a cycle) per FFMA of the main loop, from the addresses each lane reads: the kernel run on Numba's simulator, one block at its blocking, its shared reads priced by the bank rules (compile_matrix.wavefronts), the same on every architecture; only GEMM versions 3, 5, 6, 7 and 8 (the blocked kernels reading their operands from shared memory in unrolled slabs; versions 2 and 4 read as 3 does, 9 through mma.sync fragments), empty for the others",
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
    "key": "a hash of what decided its machine code: its kernel's sources, the matrix's code, the compilers (compile_matrix.keys); --check compares it with today's",
}
#: The columns that hold text, not numbers.
TEXT_COLUMNS = ("kernel", "arch", "layout", "what", "key")


def build_arch(cc: tuple[int, int], where: Path, kernels: list[str] | None = None) -> list[dict]:
    """Compile, assemble and disassemble ``kernels`` (row names; default every kernel) for ``cc``
    in ``where``; their rows of the table, without their keys."""
    from .jobs import command

    argv, env = command(cc, where, kernels)
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
    return rows


def cached_rows(cc: tuple[int, int], cache: Path, keys: dict[str, str]) -> list[dict]:
    """The rows for ``cc`` of the kernels ``keys`` names (row name -> key), in that order, each
    with its key: from ``cache``/ARCH/KERNEL.KEY.json where there, the others built (one worker
    for all of them) and cached. Cached rows of other kernels or keys are removed: stale."""
    folder = cache / arch_name(cc)
    folder.mkdir(parents=True, exist_ok=True)
    files = {kernel: folder / f"{kernel}.{key}.json" for kernel, key in keys.items()}
    for old in folder.glob("*.json"):
        if old not in files.values():
            old.unlink(missing_ok=True)
    missing = [kernel for kernel, path in files.items() if not path.exists()]
    if missing:
        scratch = Path(tempfile.mkdtemp(prefix="build-", dir=folder))
        try:
            for row in build_arch(cc, scratch, missing):
                row["key"] = keys[row["kernel"]]
                (scratch / "row.json").write_text(json.dumps(row, indent=1))
                os.replace(scratch / "row.json", files[row["kernel"]])  # whole, or not at all
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return [json.loads(files[kernel].read_text()) for kernel in keys]


#: The column measured on the simulator, not read from the machine code (``cached_wavefronts``).
WAVEFRONTS = "loop_shared_wavefronts_per_ffma"


def cached_wavefronts(cache: Path, keys: dict[str, str]) -> dict[str, float]:
    """Row name -> its shared wavefronts per FFMA, for every row ``wavefronts.gemm_builds`` measures:
    from ``cache``/wavefronts/KERNEL.KEY.json where there (``keys``: row name -> key), the others
    measured on the simulator (one process for all of them) and cached. Cached values of other
    kernels or keys are removed: stale."""
    from .wavefronts import gemm_builds, in_simulator

    folder = cache / WAVEFRONTS
    folder.mkdir(parents=True, exist_ok=True)
    files = {row: folder / f"{row}.{keys[row]}.json" for row in gemm_builds()}
    for old in folder.glob("*.json"):
        if old not in files.values():
            old.unlink(missing_ok=True)
    missing = [row for row, path in files.items() if not path.exists()]
    if missing:
        for row, measured in in_simulator("compile_matrix.wavefronts:measure_rows", *missing).items():
            (folder / "value.json").write_text(json.dumps(measured["per_ffma"]))
            os.replace(folder / "value.json", files[row])  # whole, or not at all
    return {row: json.loads(path.read_text()) for row, path in files.items()}


def built_archs() -> dict[str, list[tuple[int, int]]]:
    """Row name -> the architectures of ``ARCHS`` it is built for: all, or those at or above its
    ``Build``'s ``min_cc`` (TF32 ``mma.sync`` does not exist below sm_80: ptxas refuses it)."""
    from fastlstm_lib.kernels.versions import every

    return {build.row: [cc for cc in ARCHS if not build.min_cc or cc >= tuple(build.min_cc)]
            for spec in every() for build in spec.builds()}


def build(cache: Path = CACHE, workers: int | None = None, archs=None) -> list[dict]:
    """Every row of the table, kernels in the inventory's order, each over the architectures
    (``archs``: a subset of ``ARCHS``' keys, e.g. [(9, 0)]; default all of them) it is built for
    (``built_archs``)."""
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive int or None, got {workers!r}")
    chosen = list(ARCHS) if archs is None else list(archs)
    if not chosen or any(cc not in ARCHS for cc in chosen):
        raise ValueError(f"archs must be a non-empty list of {sorted(ARCHS)}, got {archs!r}")
    from fastlstm_lib.runtime.numba_compat import require_numba_cuda

    require_numba_cuda("the compile matrix")  # it compiles with numba-cuda's real path, never the simulator
    keys, where = kernel_keys(), built_archs()
    cache = Path(cache)
    for old in cache.glob("*") if cache.exists() else []:
        if old.name not in [*map(arch_name, ARCHS), WAVEFRONTS]:  # another layout of the cache: stale
            shutil.rmtree(old, ignore_errors=True)
    # Start the biggest share first: sm_52's worker is the only CUDA 12 one.
    archs = sorted(chosen, key=lambda cc: toolkit_of(cc) != "12")
    with concurrent.futures.ThreadPoolExecutor(workers or os.cpu_count() or 1) as pool:
        measured = pool.submit(cached_wavefronts, cache, keys)
        per_arch = dict(zip(archs, pool.map(
            lambda cc: cached_rows(cc, cache, {kernel: key for kernel, key in keys.items() if cc in where[kernel]}),
            archs)))
        per_ffma = measured.result()
    found = {(row["kernel"], row["arch"]): {**row, WAVEFRONTS: per_ffma.get(row["kernel"], "")}
             for rows in per_arch.values() for row in rows}
    return [found[kernel, arch_name(cc)] for kernel in keys for cc in ARCHS
            if cc in per_arch and (kernel, arch_name(cc)) in found]


#: A SASS listing's line that records the key (``keys``) of the sources and compilers its kernel was built from.
KEY_LINE = "# Built from sources and compilers with key "


def render(rows: list[dict]) -> str:
    """The table as committed: a ``#`` header (columns, compilers, the command), then CSV (each
    row's ``key`` saying what it was built from)."""
    if not isinstance(rows, list) or not rows:
        raise ValueError("rows must be a non-empty list of dicts")
    header = ["# Every CUDA kernel of fastlstm_lib, compiled for each GPU architecture without a GPU:",
              f"# {version_line()}.",
              "# ptxas -O3 as the driver's JIT does; the persistent kernel with -c (its grid barrier calls the",
              "# device runtime) and its register cap. Main loop: see tools/compile_matrix/sass.py.",
              "# sm_52 has no SASS columns: no disassembler on PyPI reads it (nvdisasm 13 dropped Maxwell).",
              "# tf32_gemm has rows from sm_80 on only: TF32 mma.sync does not exist on sm_52 and sm_75.",
              f"# Regenerate: {COMMAND}  (checked by tests/test_compile_matrix.py)"]
    header += [f"#   {column}: {meaning}" for column, meaning in COLUMNS.items()]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(COLUMNS), lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return "\n".join(header) + "\n" + out.getvalue()


def listings(rows: list[dict], where: Path = LISTINGS) -> dict[Path, str]:
    """The SASS files to commit: ``where``/KERNEL.ARCH.sass, the main loop of each ``LISTED`` row,
    its key line saying the row's key."""
    found = {}
    for row in rows:
        if "sass" in row:
            header = (f"# {row['kernel']} ({row['what']}) on {row['arch']}: its main loop, {row['loop_instructions']}"
                      f" instructions. {version_line()}. Regenerate: {COMMAND}\n{KEY_LINE}{row['key']}.\n")
            found[Path(where) / f"{row['kernel']}.{row['arch']}.sass"] = header + row["sass"]
    return found


def recorded_key(path: Path) -> str | None:
    """The key a SASS listing records (its key line), or None where it records none."""
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
        row = {column: (value if column in TEXT_COLUMNS or value == ""
                        else float(value) if "." in value else int(value))
               for column, value in row.items()}
        if (row["kernel"], row["arch"]) in LISTED:
            listing = (Path(where) / f"{row['kernel']}.{row['arch']}.sass").read_text()
            row["sass"] = "".join(line + "\n" for line in listing.splitlines() if not line.startswith("#"))
        rows.append(row)
    return rows


def stale(out: Path, where: Path) -> dict[str, list[str]]:
    """The kernels that are not current -> where: the table (``out``) where one of the kernel's rows
    is missing or records another key than today's (``kernel_keys``), or it has a row of no kernel
    built today; each listing in ``where`` that is missing or records another key. Empty: all current."""
    keys, built_for = kernel_keys(), built_archs()
    table = read_table(out) if Path(out).exists() else []
    recorded = {(row["kernel"], row["arch"]): row.get("key") for row in table}
    found = {}
    for kernel, arch in sorted(set(recorded) | {(kernel, arch_name(cc)) for kernel in keys for cc in built_for[kernel]}):
        built = kernel in keys and arch in map(arch_name, built_for[kernel])
        if not built or recorded.get((kernel, arch)) != keys[kernel]:
            found.setdefault(kernel, []).append(str(out))
    for kernel, arch in sorted(LISTED):
        path = Path(where) / f"{kernel}.{arch}.sass"
        if kernel not in keys or recorded_key(path) != keys[kernel]:
            found.setdefault(kernel, []).append(str(path))
    return {kernel: list(dict.fromkeys(paths)) for kernel, paths in found.items()}


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--out PATH`` writes the table, ``--check`` compares it with ``--out``'s file."""
    parser = argparse.ArgumentParser(prog="python -m compile_matrix", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=TABLE, help="the table (default: data/kernel_resources.csv)")
    parser.add_argument("--check", action="store_true", help="write nothing, compile nothing; exit 1, naming the "
                        "kernels, when a row of the table or a listing was built from other sources or compilers "
                        "than today's (its key)")
    parser.add_argument("--cache", type=Path, default=CACHE, help="where compiled kernels are kept")
    parser.add_argument("--workers", type=int, default=None, help="parallel compilations (default: CPU count)")
    args = parser.parse_args(argv)
    if args.check:  # no compiling: the key each row and listing records against its kernel's today
        outdated = stale(args.out, args.out.parent / LISTINGS.name)
        if outdated:
            print(f"{len(outdated)} kernels stale (built from other sources or compilers, or missing): regenerate "
                  f"with `{COMMAND}`", file=sys.stderr)
            for kernel, paths in outdated.items():
                print(f"  {kernel}: {', '.join(paths)}", file=sys.stderr)
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

