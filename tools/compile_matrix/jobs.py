"""The compile matrix's worker: every kernel of the library, compiled to PTX for one GPU
architecture, in a process of its own (``command``).

A process of its own because a process loads one libNVVM: CUDA 12's for sm_52, CUDA 13's for the
others. The worker (1) imports numba.cuda before ``import fastlstm_lib`` (``BOOTSTRAP``) with the
simulator off: the library then keeps Numba's real compiler although this machine may have no
GPU (it says so in one line on stderr), and kernels are built as for a GPU; (2) loads the
toolkit's libNVVM before the first compilation: cuda-pathfinder, which Numba asks for one, takes
a libNVVM already loaded (both toolkits' are ``libnvvm.so.4``); (3) points Numba at the same
toolkit's libdevice, and for sm_52 sets ``NUMBA_FORCE_CUDA_CC`` (Numba otherwise asks CUDA 13's
NVRTC which architectures exist, and it knows none below 7.5). It checks that Numba uses what
it was given.

``inventory`` is the list of kernels: a new kernel gets a line there.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import sys
import types
from pathlib import Path

from .toolkits import arch_name, tool, toolkit_of

#: The persistent kernel's plans, as on the chip it was planned for: (hidden, batches, chip).
PERSISTENT = (512, (1, 4, 64), "H100")

#: The worker's command line, ``python -c BOOTSTRAP MAJOR.MINOR DIR`` (tools/ on its PYTHONPATH).
#: numba.cuda imported first, with the simulator off, and ``import fastlstm_lib`` keeps Numba's
#: real compiler, GPU or not.
BOOTSTRAP = "import sys, numba.cuda; from compile_matrix.jobs import main; main(sys.argv[1:])"
#: The folder that holds this package: the worker imports it from there.
TOOLS = Path(__file__).resolve().parents[1]


def command(cc: tuple[int, int], out: Path) -> tuple[list[str], dict[str, str]]:
    """(argv, environment) of the worker that compiles every kernel for ``cc`` into ``out``."""
    env = {name: value for name, value in os.environ.items()
           if name not in ("NUMBA_FORCE_CUDA_CC", "FASTLSTM_SIMULATOR", "FASTLSTM_FAKE_GPU")}
    env["NUMBA_ENABLE_CUDASIM"] = "0"
    env["PYTHONPATH"] = os.pathsep.join([str(TOOLS)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    if toolkit_of(cc) == "12":
        env["NUMBA_FORCE_CUDA_CC"] = f"{cc[0]}.{cc[1]}"
    return [sys.executable, "-c", BOOTSTRAP, f"{cc[0]}.{cc[1]}", str(out)], env


def prepare(cc: tuple[int, int]) -> None:
    """Point Numba at ``cc``'s toolkit, before its first compilation, and check that it took."""
    from fastlstm_lib import simulator

    if simulator.SIMULATOR:
        raise RuntimeError("the compile matrix's worker runs as `python -c BOOTSTRAP` (see command())")
    if "libnvvm" in open("/proc/self/maps").read():
        raise RuntimeError("a libNVVM is already loaded: the worker needs a fresh process")
    toolkit = toolkit_of(cc)
    nvvm = tool(toolkit, "nvvm")
    ctypes.CDLL(str(nvvm), mode=os.RTLD_GLOBAL)  # before cuda-pathfinder looks for one
    from numba.cuda import cuda_paths
    from numba.cuda.cudadrv import libs
    import numba.cuda.dispatcher as dispatcher

    # Device functions ask the current GPU for its compute capability: say it is `cc`.
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)
    paths = cuda_paths.get_cuda_paths()
    paths["libdevice"] = paths["libdevice"]._replace(by="compile_matrix", info=str(tool(toolkit, "libdevice")))
    used = Path(paths["nvvm"].info).resolve()
    if used != nvvm.resolve() or Path(libs.get_libdevice()) != tool(toolkit, "libdevice"):
        raise RuntimeError(f"Numba would use {used} and {libs.get_libdevice()}, not CUDA {toolkit}'s")


def inventory(cc: tuple[int, int]) -> dict:
    """name -> (kernel, signature, what it is, max_registers or None, relocatable[, a blocked GEMM's
    trip counts]) for every kernel."""
    from numba import boolean, float32

    from fastlstm_lib.kernels import gemm as g, persistent as p, persistent_plan as plan, pointwise as pw
    from fastlstm_lib.kernels import pointwise_backward as pwb, reduce

    A2, A1, C3, C2, C1 = float32[:, :], float32[:], float32[:, :, ::1], float32[:, ::1], float32[::1]
    gemm_args = (A2, A2, A2, boolean)
    contiguous_args = (C2, C2, C2, boolean)
    split_args = (C2, C2, float32[:, :, ::1], boolean)
    L, S, W = g.GPU_LARGE, g.GPU_SMALL, g.GPU_WIDE
    pad = g.SHARED_PADDING

    def blocking(b):
        return f"{b.bm}x{b.bn}x{b.bk} tile, {b.tm}x{b.tn} per thread"

    jobs = {
        "tiled_gemm": (g.tiled_gemm_kernel(16), gemm_args, "16x16 tile"),
        "blocked_gemm": (g.blocked_gemm_kernel(L, False), gemm_args, blocking(L)),
        "blocked_gemm_t": (g.blocked_gemm_kernel(S, True), gemm_args, blocking(S) + ", B^T"),
        "blocked_gemm_t_strided": (g.blocked_gemm_kernel(L, True, True), gemm_args, blocking(L) + ", B^T strided"),
        "blocked_gemm_ta": (g.blocked_gemm_kernel(L, False, False, True), gemm_args, blocking(L) + ", A^T"),
        "blocked_gemm_ta_tb": (g.blocked_gemm_kernel(S, True, False, True), gemm_args, blocking(S) + ", A^T B^T"),
        # gemm()'s version 3, where the tile divides the shape: compiled for the C-contiguous
        # arrays every step passes at the article's size (the baseline's one-gate C excepted)
        "blocked_gemm_exact": (g.exact_gemm_kernel(L, False, False, pad), contiguous_args, blocking(L) + ", exact"),
        "blocked_gemm_t_exact": (g.exact_gemm_kernel(S, True, False, pad), contiguous_args, blocking(S) + ", B^T, exact"),
        "blocked_gemm_wide": (g.exact_gemm_kernel(W, False, False, pad), contiguous_args, blocking(W) + ", exact"),
        # version 4, the next slab prefetched: the article's input GEMM's blocking and its recurrent one's
        "blocked_gemm_prefetch_wide": (g.prefetch_gemm_kernel(W, pad), contiguous_args, blocking(W) + ", exact, prefetch"),
        "blocked_gemm_prefetch_small": (g.prefetch_gemm_kernel(S, pad), contiguous_args, blocking(S) + ", exact, prefetch"),
        # version 5, vector loads: it runs only on arrays whose rows are contiguous (vector.aligned)
        "blocked_gemm_vector": (g.vector_gemm_kernel(L, pad), contiguous_args, blocking(L) + ", exact, vector"),
        "blocked_gemm_vector_wide": (g.vector_gemm_kernel(W, pad), contiguous_args, blocking(W) + ", exact, vector"),
        "blocked_gemm_vector_small": (g.vector_gemm_kernel(S, pad), contiguous_args, blocking(S) + ", exact, vector"),
        # version 6, split-K: step 06's recurrent GEMM where gemm.split_plan cuts K (the 32 x 32
        # patch at batch 64 on an H100, the 64 x 64 one on an M40)
        "blocked_gemm_split_small": (g.split_gemm_kernel(S, pad), split_args, blocking(S) + ", exact, vector, split-K"),
        "blocked_gemm_split": (g.split_gemm_kernel(L, pad), split_args, blocking(L) + ", exact, vector, split-K"),
        "blocked_gemm_split_wide": (g.split_gemm_kernel(W, pad), split_args, blocking(W) + ", exact, vector, split-K"),
        "fill": (pw._fill, (A2, float32), "element-wise"),
        "add": (pw._add, (A2, A2, A2), "element-wise"),
        "add_bias": (pw._add_bias, (A2, A1, A2), "element-wise"),
        "mul": (pw._mul, (A2, A2, A2), "element-wise"),
        "sigmoid": (pw._sigmoid, (A2, A2), "element-wise"),
        "tanh": (pw._tanh, (A2, A2), "element-wise"),
        "lstm_cell": (pw._lstm_cell, (C2, C2, C1, C2, C2), "fused cell"),  # as steps 05-08 launch it
        "lstm_cell_split": (pw._lstm_cell_split, (C2, C3, C1, C2, C2), "fused cell, split-K parts"),
        "lstm_cell_train": (pwb._lstm_cell_train, (A2, A2, A1, A2, A2, A2, A2), "fused cell, saves gates"),
        "lstm_cell_backward": (pwb._lstm_cell_backward, (A2,) * 7, "fused cell backward"),
        "sigmoid_backward": (pwb._sigmoid_backward, (A2, A2, A2), "element-wise"),
        "tanh_backward": (pwb._tanh_backward, (A2, A2, A2), "element-wise"),
        "column_sum": (reduce.column_sum_kernel(reduce.GPU_ROW_THREADS), (A2, A1, boolean),
                       f"{reduce.COLUMNS} columns x {reduce.GPU_ROW_THREADS} threads down them, a shared-memory tree"),
    }
    found = {name: (kernel, signature, what, None, False) for name, (kernel, signature, what) in jobs.items()}
    for name in list(found):
        if name.startswith("blocked_gemm"):  # the blocking's trip counts: sass.slab_mix
            b = S if name in ("blocked_gemm_t", "blocked_gemm_ta_tb", "blocked_gemm_t_exact") else L
            b = S if name.endswith("_small") else b
            b = W if name.endswith("_wide") else b
            found[name] += ({"k": b.bk * b.tm * b.tn, "loads": (-(-b.bm * b.bk // b.threads), -(-b.bn * b.bk // b.threads))},)
    hidden, batches, chip = PERSISTENT
    for batch in batches:
        pl = plan.plan(hidden, batch, chip=chip, single_block=False, target_threads=plan.GPU_TARGET_THREADS)
        what = (f"hidden {hidden}, {pl.units} units x {pl.rows} rows per thread x {pl.splits} splits, "
                f"k_chunk {pl.k_chunk} ({chip} plan)")
        found[f"persistent_b{batch}"] = (pl.kernel(), (C3, C2, C1, C3), what, p.MAX_REGISTERS, True)
    return found


def compile_all(cc: tuple[int, int], out: Path) -> None:
    """Write NAME.ptx for every kernel and manifest.json (what each is, its entry point, cap)."""
    from numba import cuda, types

    manifest = {}
    for name, (kernel, signature, what, max_registers, relocatable, *trips) in inventory(cc).items():
        ptx, _ = cuda.compile_ptx(kernel.py_func, signature, cc=cc)
        if f".target {arch_name(cc)}" not in ptx:
            raise RuntimeError(f"{name}: PTX is not for {arch_name(cc)}")
        (out / f"{name}.ptx").write_text(ptx)
        entry = re.search(r"\.entry\s+(\S+)\s*\(", ptx).group(1)
        layout = ",".join("C" if arg.layout == "C" else "A" for arg in signature if isinstance(arg, types.Array))
        manifest[name] = {"what": what, "entry": entry, "max_registers": max_registers, "relocatable": relocatable,
                          "trips": trips[0] if trips else None, "layout": layout}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


def main(argv: list[str]) -> None:
    """``CC DIR``: e.g. ``9.0 /tmp/ptx``."""
    if len(argv) != 2:
        raise SystemExit("usage: PYTHONPATH=tools python -m compile_matrix.jobs MAJOR.MINOR DIR")
    cc = tuple(int(part) for part in argv[0].split("."))
    prepare(cc)
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    compile_all(cc, out)

