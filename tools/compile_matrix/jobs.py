"""The compile matrix's worker: the kernels of the library (every one, or those named), compiled to
PTX for one GPU architecture, in a process of its own (``command``).

A process of its own because a process loads one libNVVM: CUDA 12's for sm_52, CUDA 13's for the
others. The worker (1) imports numba.cuda before ``import fastlstm_lib`` (``BOOTSTRAP``) with the
simulator off: the library then keeps Numba's real compiler although this machine may have no
GPU (it says so in one line on stderr), and kernels are built as for a GPU; (2) loads the
toolkit's libNVVM before the first compilation: cuda-pathfinder, which Numba asks for one, takes
a libNVVM already loaded (both toolkits' are ``libnvvm.so.4``); (3) points Numba at the same
toolkit's libdevice, and for sm_52 sets ``NUMBA_FORCE_CUDA_CC`` (Numba otherwise asks CUDA 13's
NVRTC which architectures exist, and it knows none below 7.5). It checks that Numba uses what
it was given.

``inventory`` lists the kernels: every ``Build`` of the kernel versions' specs (``fastlstm_lib.kernels.spec``).
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

#: The worker's command line, ``python -c BOOTSTRAP MAJOR.MINOR DIR [KERNEL,KERNEL...]`` (tools/ on its PYTHONPATH).
#: numba.cuda imported first, with the simulator off, and ``import fastlstm_lib`` keeps Numba's
#: real compiler, GPU or not.
BOOTSTRAP = "import sys, numba.cuda; from compile_matrix.jobs import main; main(sys.argv[1:])"
#: The folder that holds this package: the worker imports it from there.
TOOLS = Path(__file__).resolve().parents[1]


def command(cc: tuple[int, int], out: Path, kernels: list[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """(argv, environment) of the worker that compiles ``kernels`` (row names; default every
    kernel) for ``cc`` into ``out``."""
    env = {name: value for name, value in os.environ.items()
           if name not in ("NUMBA_FORCE_CUDA_CC", "FASTLSTM_SIMULATOR", "FASTLSTM_FAKE_GPU")}
    env["NUMBA_ENABLE_CUDASIM"] = "0"
    env["PYTHONPATH"] = os.pathsep.join([str(TOOLS)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    if toolkit_of(cc) == "12":
        env["NUMBA_FORCE_CUDA_CC"] = f"{cc[0]}.{cc[1]}"
    names = [] if kernels is None else [",".join(kernels)]
    return [sys.executable, "-c", BOOTSTRAP, f"{cc[0]}.{cc[1]}", str(out), *names], env


def prepare(cc: tuple[int, int]) -> None:
    """Point Numba at ``cc``'s toolkit, before its first compilation, and check that it took."""
    from fastlstm_lib import DEVICE

    if DEVICE.kind == "simulator":
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


def inventory(cc: tuple[int, int], kernels: list[str] | None = None) -> dict:
    """name -> (kernel, signature, what it is, max_registers or None, relocatable, a blocked GEMM's
    trip counts or None) for every kernel, or those ``kernels`` names: every ``Build`` of every
    version's spec (``fastlstm_lib.kernels.spec``; a new kernel version gets its spec there, not a
    line here) that exists for ``cc`` (its ``min_cc``: the TF32 tensor-core GEMM from sm_80 on)."""
    from fastlstm_lib.kernels.versions import every

    found = {}
    for spec in every():
        for build in spec.builds():
            if (kernels is not None and build.row not in kernels) or (build.min_cc and cc < tuple(build.min_cc)):
                continue
            kernel, signature = build.make()
            b = build.blocking  # the blocking's trip counts: sass.slab_mix
            trips = None if b is None else {"k": b.bk * b.tm * b.tn, "loads": (-(-b.bm * b.bk // b.threads),
                                                                               -(-b.bn * b.bk // b.threads))}
            found[build.row] = (kernel, signature, build.what, build.max_registers, build.relocatable, trips)
    unknown = sorted(set(kernels or ()) - set(found))
    if unknown:
        raise ValueError(f"kernels {unknown} are built by no spec")
    return found


def compile_all(cc: tuple[int, int], out: Path, kernels: list[str] | None = None) -> None:
    """Write NAME.ptx for every kernel (or those ``kernels`` names) and manifest.json (what each
    is, its entry point, cap)."""
    from numba import cuda, types

    manifest = {}
    for name, (kernel, signature, what, max_registers, relocatable, trips) in inventory(cc, kernels).items():
        ptx, _ = cuda.compile_ptx(kernel.py_func, signature, cc=cc)
        if f".target {arch_name(cc)}" not in ptx:
            raise RuntimeError(f"{name}: PTX is not for {arch_name(cc)}")
        (out / f"{name}.ptx").write_text(ptx)
        entry = re.search(r"\.entry\s+(\S+)\s*\(", ptx).group(1)
        layout = ",".join("C" if arg.layout == "C" else "A" for arg in signature if isinstance(arg, types.Array))
        manifest[name] = {"what": what, "entry": entry, "max_registers": max_registers, "relocatable": relocatable,
                          "trips": trips, "layout": layout}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


def main(argv: list[str]) -> None:
    """``CC DIR [KERNEL,KERNEL...]``: e.g. ``9.0 /tmp/ptx`` (every kernel), ``9.0 /tmp/ptx exact_gemm,add``."""
    if len(argv) not in (2, 3):
        raise SystemExit("usage: PYTHONPATH=tools python -m compile_matrix.jobs MAJOR.MINOR DIR [KERNEL,KERNEL...]")
    cc = tuple(int(part) for part in argv[0].split("."))
    prepare(cc)
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    compile_all(cc, out, argv[2].split(",") if len(argv) == 3 else None)

