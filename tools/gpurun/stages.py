"""The GPU run's stages, in the order they run (issue 33): what the course most needs first (the
ladder, cuDNN, our GEMM against cuBLAS, the batch sweep), so that a first call of about 6 minutes
brings them back and a second, resumed (runner.py), the rest. Each fills one result file.

 0 smoke        versions, library paths, NVVM; a plain and a grid-sync kernel compiled and run (the
                run stops here if nothing compiles); an empty launch from Python and 1000 grid
                barriers at the persistent kernel's grid, timed
 1 ladder       every step at the article's size, plain and as CUDA Graphs      -> ladder-DATE.json
 2 cudnn        torch.nn.LSTM (cuDNN) with the same weights, and Keras' LSTM three ways when
                Keras is there; TF32 off                                        -> cudnn-DATE.json
 3 gemm         every GEMM version (the kernel runner) beside cuBLAS, its version 0, on the
                article's shapes, B in each layout, the weight gradient         -> gemm-vs-cublas-DATE.json
 4 sweep        batch 1, 4, 16, 64: wavefront, persistent and cuDNN            -> batch-sweep-DATE.json
 5 correctness  every forward step (recorded pass, replayed pass, graph=True) and backward step
                against the float64 reference at odd sizes and at a size of many blocks per kernel;
                the persistent kernel at hidden 512, batch 1-64, and a plan over 48 KiB of shared
                memory; every run twice, bitwise identical; every other family's kernel versions
                on their own, checked, then timed at the article's shapes (kernels/runner.py);
                the exercises' own solutions (every timed pass of the stages before checks its
                own result before and after timing)
 6 clocks       per step, the host's time to issue a pass against the GPU's     -> clocks-DATE.json
 7 backward     the backward ladder against cuDNN's backward                     -> backward-DATE.json
 8 profilers    Nsight Compute on the recurrent GEMM and the persistent kernel, compute-sanitizer
                on small problems, when the machine has them                     -> profilers-DATE.json
 9 cnn          the channels_first post's 10-layer CNN in both layouts, FP32 and mixed precision,
                the layouts taking turns, on Keras (torch on the GPU machine)    -> cnn-layouts-DATE.json
10 feeding      fit() at batch 1-1024 on the GPU and the CPU, one-sample predict() and its
                faster callers, on Keras (torch on the GPU machine)             -> feeding-DATE.json

Costs (``Stage.cost_s``) are estimates of seconds on the GPU machine; their basis is above ``STAGES``.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from .runner import Stage, StopRun

ROOT = Path(__file__).resolve().parents[2]
#: The packages whose versions every result file records.
PACKAGES = ("numpy", "numba", "numba-cuda", "llvmlite", "cuda-bindings", "cuda-core", "cuda-pathfinder", "torch",
            "keras", "nvtx", "nvidia-nvvm", "nvidia-cuda-runtime", "nvidia-cuda-nvrtc", "nvidia-nvjitlink", "tensorflow")


def fl():
    import fastlstm_lib

    return fastlstm_lib


def values_computed() -> bool:
    return fl().DEVICE.computes


def on_the_cpu(cfg, counts: dict) -> tuple:
    """(cfg, repeats) for work that runs on the CPU in a rehearsal (torch without a GPU, Keras
    beside the fake GPU): one pass at the odd size, its values checked, its time meaningless (the
    article's size takes seconds a pass there); on a GPU, ``cfg`` and ``counts`` as they are."""
    if not fl().DEVICE.computes:
        return sizes(True)["odd"], {"warmup": 0, "repeats": 1}
    return cfg, counts


# ---- sizes ------------------------------------------------------------------------------------

def sizes(quick: bool) -> dict:
    """The configs each stage uses; ``quick``: the rehearsal's, small enough for ``make test-tools``."""
    LSTMConfig = fl().LSTMConfig
    odd = LSTMConfig(batch=3, seq_len=5, input_size=7, hidden=13, layers=2)
    many = LSTMConfig(batch=37, seq_len=6, input_size=129, hidden=200, layers=3)  # many blocks per kernel
    article = odd if quick else LSTMConfig.article()
    persistent = [LSTMConfig(batch=b, seq_len=5, input_size=512, hidden=512, layers=2) for b in (1, 4, 16, 64)]
    # Hidden 1024: the U slice of a block of 8 units is 128 KiB, over the 48 KiB a block gets
    # without opting in (the plan asks for it; the driver must grant it).
    large_shared = LSTMConfig(batch=4, seq_len=4, input_size=64, hidden=1024, layers=1)
    # Quick (make test-tools): every code path once, each kernel compiled once (the persistent kernel
    # compiles per plan): no many-block size, one persistent plan, the sweep at the odd batch.
    # Beside the fake GPU, one timed pass each at every size, as in backward (and notebooks 10 and 41):
    # its times mean nothing, and the GPU's 20-50 passes of every step were most of the ladder's and
    # clocks' minutes there, which kept the README's two calls from reaching every stage on a slow
    # machine (issue 70).
    once = quick or not values_computed()
    return {"odd": odd, "many": None if quick else many, "article": article,
            "persistent": [] if quick else persistent, "large_shared": None if quick else large_shared,
            "batches": (odd.batch,) if quick else (1, 4, 16, 64),
            "repeats": {"warmup": 0, "repeats": 1} if once else {"warmup": 3, "repeats": 20},
            "clock_repeats": {"warmup": 0, "repeats": 1} if once else {"warmup": 2, "repeats": 10},
            "graph_repeats": {"warmup": 0, "repeats": 1} if once else {"warmup": 3, "repeats": 50}}


# ---- the environment, recorded in every file --------------------------------------------------

def package_versions() -> dict:
    found = {}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def nvidia_smi() -> str | None:
    if not shutil.which("nvidia-smi"):
        return None
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.sm,power.limit,"
                               "temperature.gpu,memory.total", "--format=csv"], capture_output=True, text=True, timeout=20)
        return done.stdout.strip() or done.stderr.strip()
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{type(error).__name__}: {error}"


def environment(ctx) -> dict:
    """Device, driver, every package's version and where each came from, numba-cuda's library paths."""
    if "environment" not in ctx.shared:
        info = {"device": fl().device_info(), "packages": package_versions(), "python": sys.version.split()[0],
                "executable": sys.executable, "machine": platform.machine(), "cpus": os.cpu_count(),
                "commit": os.environ.get("FASTLSTM_COMMIT"), "nvidia_smi": nvidia_smi(),
                "keras_backend": os.environ.get("KERAS_BACKEND"),
                "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS")}
        prepared = ctx.out / "prepare.json"
        if prepared.is_file():
            record = json.loads(prepared.read_text())
            info["from_bundle"] = record.get("from_bundle")
            info["cuda_from_bundle"] = record.get("cuda_from_bundle", [])
        if not fl().is_simulator():
            from numba.cuda.cuda_paths import get_cuda_paths

            info["cuda_paths"] = {key: {"found_by": value[0], "path": value[1]} for key, value in get_cuda_paths().items()}
        ctx.shared["environment"] = info
    return ctx.shared["environment"]


# ---- 0: smoke ----------------------------------------------------------------------------------

def _probe_kernels():
    from numba import cuda

    @cuda.jit
    def neighbours(values, out):
        """Write, wait at the grid barrier, read what another block wrote: wrong without the barrier."""
        i = cuda.grid(1)
        values[i] = i
        cuda.cg.this_grid().sync()
        out[i] = values[(i + cuda.blockDim.x) % values.size]

    @cuda.jit
    def barriers(count, out):
        grid = cuda.cg.this_grid()
        for _ in range(count):
            grid.sync()
        if cuda.grid(1) == 0:
            out[0] = count

    @cuda.jit
    def empty():
        pass

    return neighbours, barriers, empty


def where_found():
    """How numba-cuda found each CUDA library ('site-packages', 'System', 'Conda'...), no paths."""
    from numba.cuda.cuda_paths import get_cuda_paths

    return {name: found.by for name, found in get_cuda_paths().items() if found is not None and found.info}


def cudadevrt_found() -> bool:
    """Whether numba-cuda finds libcudadevrt.a, the CUDA device runtime a grid barrier links."""
    from numba.cuda.cudadrv import libs

    return os.path.isfile(libs.get_cudalib("cudadevrt", static=True))


def smoke(ctx) -> dict:
    """The doctor's CUDA probe first (libraries found and how, the device, a plain kernel), then a
    grid barrier across many blocks and the two costs the lessons lack."""
    from numba import cuda

    from fastlstm_lib.setup.doctor import cuda_probe

    lib = fl()
    environment(ctx)
    facts: dict = {}
    for key, question in (("found_by", where_found), ("nvvm", lambda: cuda_probe.library_found("nvvm")),
                          ("nvrtc", lambda: cuda_probe.library_found("nvrtc")),
                          ("cudadevrt", cudadevrt_found), ("device", cuda_probe.device)):
        cuda_probe.ask(facts, key, question)
    ctx.keep(dict(facts, measurement="cuda_probe"))
    ctx.rows.append({"item": "libraries and device (the doctor's probe)", "outcome": "ok", **{
        key: value if not isinstance(value, dict) else json.dumps(value) for key, value in facts.items()}})
    neighbours, barriers, empty = _probe_kernels()
    headline = []

    def plain():
        cuda_probe.plain_kernel()  # raises if it computed wrong values (where values are computed)
        return {"values_checked": values_computed()}

    if ctx.item("plain kernel: compile and run (the doctor's)", plain) is None:
        raise StopRun(f"not even a plain kernel compiles and runs (see its traceback); NVVM: {facts.get('nvvm')}, "
                      f"found by {facts.get('found_by')}")
    from fastlstm_lib.runtime.device import multiprocessors

    sms = multiprocessors()

    def grid_sync():
        blocks, threads = 2 * sms, 128
        values = cuda.device_array(blocks * threads, np.float32)
        out = cuda.device_array(blocks * threads, np.float32)
        neighbours[blocks, threads](values, out)
        got = out.copy_to_host()
        expected = (np.arange(blocks * threads) + threads) % (blocks * threads)
        if values_computed() and not np.array_equal(got, expected):
            raise RuntimeError(f"the grid barrier did not hold: {int(np.sum(got != expected))} of {got.size} wrong")
        return {"blocks": blocks, "threads": threads, "values_checked": values_computed()}

    ctx.item("grid-sync kernel: compile, cooperative launch of 2 blocks per SM, the barrier holds", grid_sync)

    def empty_launch():
        for _ in range(10):
            empty[1, 1]()
        cuda.synchronize()
        n = 200 if ctx.quick else 5000
        start, end = cuda.event(timing=True), cuda.event(timing=True)
        start.record()
        t0 = time.perf_counter()
        for _ in range(n):
            empty[1, 1]()
        issued = time.perf_counter()
        end.record()
        end.synchronize()
        wall = time.perf_counter()
        result = {"launches": n, "issue_us_per_launch": (issued - t0) / n * 1e6,
                  "wall_us_per_launch": (wall - t0) / n * 1e6,
                  "gpu_us_per_launch": cuda.event_elapsed_time(start, end) * 1e3 / n,
                  "library_launch_overhead_us": lib.launch_overhead_us(n)}
        headline.append(f"empty launch {result['issue_us_per_launch']:.1f} us to issue")
        return result

    ctx.item("empty launch from Python", empty_launch)

    def grid_barriers():
        from fastlstm_lib.kernels.persistent import plan

        size = sizes(ctx.quick)
        cfg = size["persistent"][-1] if size["persistent"] else size["odd"]
        grid = plan(cfg.hidden, cfg.batch)
        out = cuda.device_array(1, np.int32)
        count = 1000

        def timed(n):
            barriers[grid.blocks, grid.threads](n, out)  # compile, load, warm
            cuda.synchronize()
            start, end = cuda.event(timing=True), cuda.event(timing=True)
            times = []
            for _ in range(3 if ctx.quick else 11):
                start.record()
                barriers[grid.blocks, grid.threads](n, out)
                end.record()
                end.synchronize()
                times.append(cuda.event_elapsed_time(start, end))
            return float(np.median(times))

        zero, many = timed(0), timed(count)
        per = (many - zero) / count * 1e3
        headline.append(f"grid barrier {per:.2f} us at {grid.blocks} blocks")
        return {"blocks": grid.blocks, "threads": grid.threads, "barriers": count, "launch_ms": zero,
                "with_barriers_ms": many, "us_per_barrier": per,
                "plan": dataclasses.asdict(grid), "config": cfg.as_dict()}

    ctx.item("1000 grid barriers at the persistent kernel's grid", grid_barriers)
    return {"headline": "; ".join(headline)}


# ---- 5: correctness ---------------------------------------------------------------------------

def flat(result) -> np.ndarray:
    """Every array in a result (an array, a tuple of arrays, LayerParams...) as one float64 vector."""
    if isinstance(result, np.ndarray):
        return result.astype(np.float64).ravel()
    if isinstance(result, dict):
        result = list(result.values())
    if isinstance(result, (tuple, list)):
        parts = [flat(part) for part in result]
        return np.concatenate(parts) if parts else np.zeros(0)
    if hasattr(result, "__dict__"):
        return flat([value for value in vars(result).values() if isinstance(value, (np.ndarray, tuple, list))])
    return np.asarray(result, dtype=np.float64).ravel()


def checked_pass(runner, ref, step, when: str, rtol: float) -> tuple[float | None, np.ndarray]:
    """Poison, launch, compare with the reference within ``rtol`` (NaN and infinity refused, saying where)."""
    from fastlstm_lib.reference import where_nonfinite

    runner.poison()
    runner.launch()
    result = runner.result()
    if not values_computed():
        return None, np.zeros(0)
    nonfinite = where_nonfinite(result)
    if nonfinite:
        raise RuntimeError(f"{step.name} {when}: {nonfinite}")
    error = runner.error(ref)
    if not error <= rtol:
        raise RuntimeError(f"{step.name} {when}: relative error {error:.3g} > {rtol:g}")
    return error, flat(result)


def passes_checked(step, cfg, *, graph: bool = False, **options) -> dict:
    """A runner on the shared problem: two (graph: three) passes, each checked, the last two bitwise equal."""
    from fastlstm_lib import harness

    extra = step.extra_inputs(cfg, 0)
    ref = harness.expected(step, cfg, 0, extra)
    x, params, _ = harness.problem(cfg, 0)
    runner = step.runner(x, params, **extra, graph=graph, **options)
    labels = ["recorded pass", "graph pass", "graph pass again"] if graph else ["recorded pass", "replayed pass"]
    errors, results, rtol = {}, [], step.tolerance(**options)  # the GEMM policy's, where wider ("tf32")
    for label in labels:
        errors[label], values = checked_pass(runner, ref, step, label, rtol)
        results.append(values)
    identical = None
    if values_computed():
        identical = bool(np.array_equal(results[-1], results[-2]))
        if not identical:
            differ = int(np.sum(results[-1] != results[-2]))
            raise RuntimeError(f"{step.name}: two passes differ bitwise in {differ} of {results[-1].size} values "
                               "(no kernel uses atomics: a race)")
    plan = getattr(runner.state, "plan", None)
    return {"step": step.name, "config": cfg.as_dict(), "graph": graph, "relative_error": errors,
            "rtol": rtol, "bitwise_identical": identical, "values_checked": values_computed(),
            **({"plan": dataclasses.asdict(plan)} if plan is not None else {})}


def kernel_versions(ctx, gemm: bool) -> list[dict]:
    """The kernel versions of the GEMM family (``gemm``; cuBLAS its version 0) or of every other
    family, each on its own (the kernel runner, ``python -m fastlstm_lib.kernels``): checked at odd
    sizes, then at the article's shapes checked, timed (CUDA events) and checked again, one row per
    case. On the fake GPU every launch and event is made, nothing compared, with few repeats. A
    version that cannot run here (cuBLAS without torch) is a skipped row, saying why."""
    from fastlstm_lib.kernels.case import Unavailable
    from fastlstm_lib.kernels.catalog import VERSIONS
    from fastlstm_lib.kernels.runner import INNER, REPEATS, WARMUP, measure

    computed = values_computed()
    counts = (INNER, WARMUP, REPEATS) if computed and not ctx.quick else (2, 0, 2)
    rows = []
    for version in VERSIONS:
        if (version.family == "gemm") != gemm:
            continue

        def one(version=version):
            try:
                measured = measure(version, check=computed, counts=counts)
            except Unavailable as error:
                ctx.rows.append({"item": f"kernel {version.label}", "outcome": f"skipped: {error}"})
                return None
            rows.extend(measured)
            return [ctx.keep(dict(row, measurement="kernel_version", checked=computed)) for row in measured]

        ctx.item(f"kernel {version.label}: validated, then timed at the article's shapes", one)
    return rows


def correctness(ctx) -> dict:
    lib = fl()
    size = sizes(ctx.quick)
    for label in ("odd", "many") if size["many"] else ("odd",):
        cfg = size[label]
        for name in lib.steps.names():
            step = lib.steps.get(name)
            for graph in (False, True) if step.replayable else (False,):
                ctx.item(f"forward {name} {label}{' graph' if graph else ''}",
                         lambda: ctx.keep(passes_checked(step, cfg, graph=graph)))
        for name in lib.backward.names():
            step = lib.backward.get(name)
            ctx.item(f"backward {name} {label}", lambda: ctx.keep(passes_checked(step, cfg)))
    persistent = lib.steps.get("persistent")
    for cfg in size["persistent"]:
        ctx.item(f"persistent hidden {cfg.hidden} batch {cfg.batch}", lambda: ctx.keep(passes_checked(persistent, cfg)))

    def large():
        row = passes_checked(persistent, size["large_shared"])
        row["shared_bytes"] = persistent_shared_bytes(row["plan"])
        if row["shared_bytes"] <= 48 * 1024:
            raise RuntimeError(f"this plan uses {row['shared_bytes']} bytes of shared memory: not over 48 KiB")
        return ctx.keep(row)

    if size["large_shared"]:
        ctx.item("persistent plan over 48 KiB of shared memory", large)
    kernel_versions(ctx, gemm=False)
    for name in lib.exercises.names():
        if not values_computed():
            ctx.rows.append({"item": f"exercise {name}: its solution passes",
                             "outcome": "skipped: the fake GPU computes no values, and the graders judge values"})
            continue

        def grade(name=name):
            verdict = lib.exercises.grade(name)
            if verdict.status != "passed":
                raise RuntimeError(f"the exercise's own solution was graded {verdict.status}: {verdict.text[:500]}")
            return {"exercise": name, "status": verdict.status}

        ctx.item(f"exercise {name}: its solution passes", grade)
    return {"headline": "every check passed" if not any(r["outcome"].startswith("failed") for r in ctx.rows)
            else f"failed: {', '.join(r['item'] for r in ctx.rows if r['outcome'].startswith('failed'))[:300]}"}


def persistent_shared_bytes(plan_dict: dict) -> int | None:
    from fastlstm_lib.kernels.persistent import Plan

    return Plan(**plan_dict).shared_bytes


# ---- 1: the ladder -----------------------------------------------------------------------------

#: Steps timed a second time with the "fast" GEMM policy (128-bit loads, the recurrent GEMM split in
#: parts of K: steps/gemm_policy.py), beside the ladder's own, and a third time with "tf32" (the
#: GEMMs on tensor cores where version 9 fits; skipped with the reason below compute capability 8.0):
#: the ladder's last step, the fastest configuration (the frame has seconds for one more pass, not
#: for every step).
FAST_STEPS = ("wavefront",)


def ladder(ctx) -> dict:
    lib = fl()
    size = sizes(ctx.quick)
    cfg = size["article"]
    times = {}
    for name in lib.steps.names():
        result = ctx.item(f"{name}", lambda: ctx.keep(lib.harness.bench_or_skip(name, cfg, replay=True, **size["repeats"])))
        if result and "time_ms" in result:
            times[name] = result["time_ms"]["median"]
    for name in lib.steps.names():
        if lib.steps.get(name).replayable:
            result = ctx.item(f"{name} graph", lambda: ctx.keep(
                lib.harness.bench_or_skip(name, cfg, graph=True, **size["graph_repeats"])))
            if result and "time_ms" in result:
                times[f"{name} graph"] = result["time_ms"]["median"]
    # The fastest configuration, gemms="fast" (the ladder's readers skip these: results.committed_results)
    for name in FAST_STEPS:
        for policy in ("fast", "tf32"):
            result = ctx.item(f"{name} gemms={policy}", lambda: ctx.keep(
                lib.harness.bench_or_skip(name, cfg, gemms=policy, replay=True, **size["repeats"])))
            if result and "time_ms" in result:
                times[f"{name} {policy}"] = result["time_ms"]["median"]
    names = lib.steps.names()
    first, last = names[0], "wavefront"
    headline = ""
    if first in times and last in times:
        headline = f"{first} {times[first]:.2f} ms -> {last} {times[last]:.2f} ms: {times[first] / times[last]:.1f}x"
        if f"{last} graph" in times:
            headline += f"; as graphs {times[f'{first} graph'] / times[f'{last} graph']:.1f}x" \
                if f"{first} graph" in times else ""
    if last in times and f"{last} fast" in times:
        headline += f"; {last} with the fast GEMMs {times[f'{last} fast']:.2f} ms"
    if last in times and f"{last} tf32" in times:
        headline += f", with TF32 tensor cores {times[f'{last} tf32']:.2f} ms"
    return {"headline": headline, "config": cfg.as_dict()}


# ---- 2: cuDNN ------------------------------------------------------------------------------------

def torch_missing() -> str | None:
    try:
        import torch  # noqa: F401
    except ImportError:
        return "torch is not installed: cuDNN is reached through torch.nn.LSTM"
    return None


def torch_row(cfg, counts: dict, backward: bool = False, tf32: bool = False) -> dict:
    """cuDNN's LSTM through torch (``torch_cudnn``, or ``torch_cudnn_tf32`` with TF32 allowed), at
    ``on_the_cpu``'s size and repeats."""
    from . import torch_cudnn

    where, counts = on_the_cpu(cfg, counts)
    return torch_cudnn.bench_torch_lstm(where, backward=backward, tf32=tf32, **counts)


def tf32_missing() -> str | None:
    """Why cuDNN with TF32 on is not timed here (no torch, no GPU, or one older than compute
    capability 8.0: TF32 tensor cores begin with Ampere), or None."""
    why = torch_missing()
    if why:
        return why
    import torch

    if not torch.cuda.is_available():
        return "torch sees no GPU"
    major, minor = torch.cuda.get_device_capability()
    if major < 8:
        return f"{torch.cuda.get_device_name()} is compute capability {major}.{minor}; TF32 tensor cores need 8.0"
    return None


def keras_missing() -> str | None:
    try:
        importlib.metadata.version("keras")
    except importlib.metadata.PackageNotFoundError:
        return "Keras is not installed (the bundle brings it: tools/gpu_bundle.sh)"
    return None


def cudnn(ctx) -> dict:
    lib = fl()
    size = sizes(ctx.quick)
    cfg = size["article"]
    headline = []
    row = ctx.item("torch.nn.LSTM (cuDNN), TF32 off",
                   lambda: ctx.keep(torch_row(cfg, size["repeats"])))
    if row:
        headline.append(f"torch cuDNN {row['time_ms']['median']:.2f} ms")
    why = tf32_missing()
    if why:
        ctx.rows.append({"item": "torch.nn.LSTM (cuDNN), TF32 on", "outcome": f"skipped: {why}"})
    else:
        row = ctx.item("torch.nn.LSTM (cuDNN), TF32 on",
                       lambda: ctx.keep(torch_row(cfg, size["repeats"], tf32=True)))
        if row:
            headline.append(f"with TF32 {row['time_ms']['median']:.2f} ms")
    why = keras_missing()
    if why:
        ctx.rows.append({"item": "Keras' LSTM", "outcome": f"skipped: {why}"})
    else:
        from fastlstm_lib.runtime.keras_backend import backend_name, set_tf32

        def keras_step(name):
            set_tf32(False)
            where, counts = on_the_cpu(cfg, size["repeats"])
            return ctx.keep(dict(lib.bench(name, where, **counts), tf32=False, keras_backend=backend_name()))

        for name in lib.steps.keras_names():
            row = ctx.item(f"Keras {name}", lambda: keras_step(name))
            if row and name == "keras_cudnn":
                headline.append(f"Keras cuDNN {row['time_ms']['median']:.2f} ms")
    return {"headline": ", ".join(headline), "tf32": False, "config": cfg.as_dict()}


# ---- 6: clocks -----------------------------------------------------------------------------------

def clocks(ctx) -> dict:
    lib = fl()
    size = sizes(ctx.quick)
    cfg = size["article"]
    for name in lib.steps.names():
        ctx.item(name, lambda: ctx.keep(lib.harness.bench_or_skip(name, cfg, measure=lib.host_and_device_times, replay=True,
                                                                  **size["clock_repeats"])))
        if lib.steps.get(name).replayable:
            ctx.item(f"{name} graph", lambda: ctx.keep(dict(lib.harness.bench_or_skip(
                name, cfg, measure=lib.host_and_device_times, graph=True, **size["clock_repeats"]))))
    bound = [r["step"] for r in ctx.kept if r.get("issue_ms") and r.get("device_ms")
             and r["issue_ms"]["median"] >= 0.9 * r["device_ms"]["median"] and not r["options"].get("graph")]
    return {"headline": f"host-bound (issue >= 0.9 x GPU): {', '.join(bound) or 'none'}", "config": cfg.as_dict()}


# ---- 3: GEMM against cuBLAS -------------------------------------------------------------------------

def gemm(ctx) -> dict:
    """The GEMM family through the kernel runner: every version, cuBLAS (version 0) among them,
    checked and timed at the article's shapes, B in each layout, and the weight gradient."""
    from fastlstm_lib.kernels.runner import gemm_table

    rows = kernel_versions(ctx, gemm=True)
    table = gemm_table(rows)
    return {"headline": table.splitlines()[-1].strip() if table else "", "table": table}


# ---- 4: batch sweep -------------------------------------------------------------------------------

def sweep(ctx) -> dict:
    lib = fl()
    size = sizes(ctx.quick)
    base = size["article"]
    for batch in size["batches"]:
        cfg = dataclasses.replace(base, batch=batch)
        for name in ("wavefront", "persistent"):
            ctx.item(f"batch {batch} {name}", lambda: ctx.keep(lib.harness.bench_or_skip(
                name, cfg, **({"replay": True} if lib.steps.get(name).replayable else {}), **size["repeats"])))
        if torch_missing() is None:
            ctx.item(f"batch {batch} torch cuDNN",
                     lambda: ctx.keep(torch_row(cfg, size["repeats"])))
    best = {}
    for r in ctx.kept:
        if "time_ms" in r:
            best.setdefault(r["config"]["batch"], {})[r["step"]] = r["time_ms"]["median"]
    parts = []
    for batch, found in sorted(best.items()):
        if "torch_cudnn" in found and len(found) > 1:
            ours = min((v, k) for k, v in found.items() if k != "torch_cudnn")
            parts.append(f"batch {batch}: {ours[1]} {ours[0] / found['torch_cudnn']:.2f}x cuDNN")
    return {"headline": "; ".join(parts), "config": base.as_dict()}


# ---- 7: backward -----------------------------------------------------------------------------------

def backward(ctx) -> dict:
    from fastlstm_lib.backward.benchmark import bench_backward

    size = sizes(ctx.quick)
    cfg = size["article"]
    counts = size["clock_repeats"]  # each pass runs forward and backward: 10 timed passes (one beside the fake GPU)
    if not fl().DEVICE.computes:
        # Timed only where times mean something (as notebook 41 does): beside the fake GPU one timed
        # pass each (sizes), which launches every kernel at the article's size, and the float64 reference
        # is not computed (harness.timed_run). The first two steps issue thousands of launches a
        # pass through numba-cuda's slicing of strided views, seconds of the host's each: their 12
        # passes each way took most of the 278 s the backward stage ran in the rehearsal of issue 70.
        ctx.rows.append({"item": "timed passes", "outcome": "ok", "value": "one each: the fake GPU (times mean nothing)"})
    costs = {} if ctx.quick else BACKWARD_COSTS_S
    keras = keras_missing() is None
    if keras and not fl().DEVICE.computes:
        keras = False  # Keras would train on the CPU at the article's size: minutes, for no number
        ctx.rows.append({"item": "Keras' LSTM forward + backward", "outcome": "skipped: beside the fake GPU Keras "
                         "trains on the CPU (minutes at the article's size); stage 2 rehearses Keras"})
    # Each part is kept the moment it ends ("parts"), so a stage cut short at the budget keeps them;
    # the whole report replaces them once bench_backward returns.
    report = ctx.keep({"measurement": "backward", "parts": []})

    def each(label, call):
        part = ctx.item(label, call, cost_s=costs.get(label.split()[0], 0))
        if part is not None:
            report["parts"].append(dict(part, part=label))
        return part

    report.update(bench_backward(cfg, keras=keras, **counts, each=each))
    del report["parts"]
    if torch_missing() is None:
        ctx.item("torch.nn.LSTM (cuDNN) forward + backward, TF32 off",
                 lambda: ctx.keep(torch_row(cfg, counts, backward=True)))
    last = fl().backward.names()[-1]
    ours = next((r for r in report.get("steps", []) if r["options"].get("timed") == "forward+backward"
                 and r["step"] == last), None)
    cudnn_row = next((r for r in ctx.kept if r.get("step") == "torch_cudnn_training"), None)
    if ours and cudnn_row:
        return {"headline": f"{ours['step']} {ours['time_ms']['median']:.2f} ms = "
                            f"{ours['time_ms']['median'] / cudnn_row['time_ms']['median']:.2f}x cuDNN's forward + backward"}
    return {}


#: Seconds one backward part may need on the GPU machine (its first: the float64 reference, ~10 s
#: at the article's size on this project's machine); a part the time left cannot cover is skipped.
#: The first two steps are host-bound there too: ~3 s a pass of issuing on this project's machine
#: (2026-12-05: numba-cuda slices a strided view of a weight matrix row by row, thousands of times a
#: pass), 12 passes each way.
BACKWARD_COSTS_S = {"bwd_op_by_op": 65, "bwd_fused_pointwise": 30, "bwd_combined_gemms": 15,
                    "bwd_combined_weights": 10, "bwd_wavefront": 10, "weight": 5, "Keras": 20}


# ---- 8: profilers ------------------------------------------------------------------------------------

def find_tool(name: str) -> str | None:
    for candidate in (shutil.which(name), f"/usr/local/cuda/bin/{name}", *sorted(Path("/opt/nvidia").glob(f"**/{name}"))):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def profilers_missing() -> str | None:
    if not (find_tool("ncu") or find_tool("compute-sanitizer")):
        return "neither Nsight Compute (ncu) nor compute-sanitizer is on this machine"
    return None


def profilers(ctx) -> dict:
    """Each tool on a small problem in a child process of its own, within the time left."""
    script = ROOT / "tools" / "gpurun" / "small_problem.py"
    python = sys.executable
    env = dict(os.environ)
    runs = []
    ncu = find_tool("ncu")
    if ncu:
        runs.append(("ncu: the recurrent GEMM and the persistent kernel",
                     [ncu, "--target-processes", "all", "--kernel-name", "regex:gemm|persistent", "--launch-count", "4",
                      "--section", "SpeedOfLight", "--section", "MemoryWorkloadAnalysis", "--section",
                      "WarpStateStats", "--csv", "--page", "details", python, str(script)], 150))
    sanitizer = find_tool("compute-sanitizer")
    if sanitizer:
        for tool in ("memcheck", "racecheck", "synccheck"):
            runs.append((f"compute-sanitizer {tool}", [sanitizer, "--tool", tool, "--error-exitcode", "3", python,
                                                      str(script), "--tiny"], 90))
    for label, command, cost in runs:
        def call(command=command, cost=cost):
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=min(cost, ctx.left() - 5))
            return {"returncode": done.returncode, "stdout": done.stdout[-12000:], "stderr": done.stderr[-4000:]}

        ctx.item(label, call, cost_s=cost)
    return {}

# ---- 9: the CNN layouts (notebook 21), and 10: batch size and small calls (notebook 31) ------------
# Both train with Keras on the backend the run chose (torch on the GPU machine, which has no
# TensorFlow); every result carries keras_backend.environment(): device, backend, versions, TF32.

#: The 10-layer CNN at the post's width on CIFAR-10-sized images, with fewer images per epoch and
#: fewer rounds than the notebook's command (cnn.MEASURE_COMMAND), to fit the run; "tiny" sizes in a
#: rehearsal, where Keras trains on the CPU beside the fake GPU.
CNN_RUN = {"images": 10_000, "test_images": 2_000, "rounds": 3, "batch": 128}
#: Seconds per precision on the GPU machine (both layouts: a first epoch each, then CNN_RUN's rounds):
#: an estimate, not a rehearsal (about 80 steps an epoch at 10-20 ms each through Keras' torch
#: backend, 8 epochs, plus building and tracing); a precision the time left cannot cover is skipped.
CNN_COST_S = 30
#: The fit_generator post compared batch 64 and 1024; from one sample up, on the GPU and the CPU.
FEEDING_BATCHES = (1, 8, 64, 256, 1024)


def tiny_keras(ctx) -> bool:
    """Keras at the rehearsal's sizes: in --quick, and beside the fake GPU (Keras trains on the CPU)."""
    return ctx.quick or not fl().DEVICE.computes


def cnn_layouts(ctx) -> dict:
    from fastlstm_lib.runtime.keras_backend import backend_name, environment as keras_environment, set_tf32
    from fastlstm_lib.topics import cnn
    from fastlstm_lib.topics.cnn.measure import SIZES

    tiny = tiny_keras(ctx)
    size = SIZES["tiny"]
    run = ({"images": size["images"]["cnn10"], "test_images": size["test_images"], "rounds": size["rounds"],
            "batch": size["batch"]} if tiny else CNN_RUN)
    options = size["options"]["cnn10"] if tiny else dict(cnn.FULL_SIZE["cnn10"])
    set_tf32(False)  # true float32 convolutions, as on the post's Turing GPU
    env = keras_environment()
    data = cnn.load_images(run["images"], run["test_images"], image_size=size["image_size"] if tiny else 32,
                           download=False)  # no network on the GPU machine: CIFAR-10 if cached, else labelled stand-in
    ctx.rows.append({"item": "images", "outcome": "ok", "value": data.description})
    verdicts = []
    for precision in cnn.PRECISIONS:
        def layouts(precision=precision):
            return [ctx.keep(result) for result in cnn.time_layouts(
                "cnn10", data, precision=precision, batch_size=run["batch"], rounds=run["rounds"], env=env,
                on_error="record", **options)]

        results = ctx.item(f"cnn10, {precision}: channels_first and channels_last in turns", layouts,
                           cost_s=0 if tiny else CNN_COST_S)
        if results:
            verdicts += [f"{precision}: {cnn.verdict(row)}" for row in cnn.compare_layouts(results)]
    return {"headline": "; ".join(verdicts) or "no layout pair trained", "keras_backend": backend_name(),
            "images": data.description}


def feeding(ctx) -> dict:
    from fastlstm_lib.runtime.keras_backend import backend_name
    from fastlstm_lib.topics.feeding.devices import measure_devices

    counts = ({"batch_sizes": FEEDING_BATCHES[:2], "n_samples": 16, "max_steps": 2, "repeats": 1,
               "small_calls": {"repeats": {"model.predict(x)": 2, "default": 3}}} if tiny_keras(ctx) else
              {"batch_sizes": FEEDING_BATCHES, "n_samples": 8192, "max_steps": 64, "repeats": 3})
    results = ctx.item("fit() against batch size, and one-sample calls, on each device",
                       lambda: [ctx.keep(result) for result in measure_devices(**counts)])
    lines = [f"{r['device']}: " + ", ".join(f"B={t['batch_size']} {t['samples_per_s']:,.0f}/s" for t in r["throughput"])
             for r in results or []]
    return {"headline": "; ".join(lines), "keras_backend": backend_name()}



#: Estimated seconds per stage on the H100 machine (``cost_s``). The basis: the rehearsal at full
#: size on a fake H100 on this project's 2-core machine (2026-11-26), which pays the host's whole
#: share (compiling, issuing every launch through numba-cuda and a slower fake driver) and none of
#: the GPU's: smoke 2-4 s, correctness 24-28 s, ladder 100-108 s, clocks 50-55 s, sweep 15 s, backward 126 s;
#: to the ladder since, the wavefront once more with its recurrent GEMM whole (~6 s, as its first pass);
#: the article's passes take milliseconds on a GPU. Added: a CUDA context, torch's and Keras'
#: import (~20 s here) and their passes; to correctness, the kernel versions alone (an estimate,
#: not yet rehearsed at full size: ~20,000 launches of microseconds, the persistent layer's ~700
#: of a few milliseconds each, and the float64 answers on the CPU: ~20 s). Backward's figure is its first part (the float64
#: reference and the op-by-op step); every later part is guarded by its own (BACKWARD_COSTS_S).
#: Checked 2026-12-05 (issue 70; the README's two calls on a fake H100, this machine shared, so
#: slower than alone): smoke 2 s, ladder 95 s, gemm 53 s (every GEMM version compiled: 20 s was
#: too few; on a 2-core machine 2.6x slower, ladder 148 s and gemm 58 s), sweep 16 s, correctness
#: 19 s, clocks 35 s; backward 78 s beside the fake GPU, which times one pass of each part there:
#: with the GPU's 12 passes the host's share is ~170 s (its first two steps ~3 s a pass, see
#: BACKWARD_COSTS_S). A stage may run SHARE_FACTOR times its estimate plus SHARE_SLACK_S (runner.py).
#: The Keras stages after the LSTM's (9 cnn, 10 feeding) have no GPU rehearsal behind their figures
#: (beside the fake GPU Keras trains on the CPU, at tiny sizes: 15 s and 1-3 s in the quick
#: rehearsal, 2026-11-28): each is the estimate beside its
#: constants (CNN_COST_S per precision, the stage's cost being one precision's), and they run only
#: where the LSTM's stages, whose figures include the fake driver's slow host, finish early.
STAGES = [
    Stage(0, "smoke", "versions, paths, NVVM; a plain and a grid-sync kernel; launch and barrier costs", smoke,
          cost_s=20, quick_cost_s=10, file="smoke-{date}.json"),
    Stage(1, "ladder", "the ladder at the article's size, plain and as CUDA Graphs", ladder,
          cost_s=116, quick_cost_s=5, file="ladder-{date}.json"),
    Stage(2, "cudnn", "cuDNN with the same weights: torch.nn.LSTM (TF32 off, and on from compute capability 8.0), and "
                      "Keras when it is there (TF32 off)", cudnn,
          cost_s=40, quick_cost_s=5, file="cudnn-{date}.json", unavailable=torch_missing),
    Stage(3, "gemm", "every GEMM version against cuBLAS (version 0) on the article's shapes", gemm,
          cost_s=55, quick_cost_s=60, file="gemm-vs-cublas-{date}.json"),
    Stage(4, "sweep", "batch 1, 4, 16, 64: wavefront, persistent and cuDNN", sweep,
          cost_s=25, quick_cost_s=5, file="batch-sweep-{date}.json"),
    Stage(5, "correctness", "every step against the reference at odd sizes and many blocks, twice, bitwise; "
          "each kernel version alone, checked then timed", correctness, cost_s=80, quick_cost_s=35,
          file="correctness-{date}.json"),
    Stage(6, "clocks", "issue time against GPU time per step", clocks,
          cost_s=55, quick_cost_s=5, file="clocks-{date}.json"),
    Stage(7, "backward", "the backward ladder against cuDNN's", backward,
          cost_s=170, quick_cost_s=10, file="backward-{date}.json"),
    Stage(8, "profilers", "Nsight Compute and compute-sanitizer on small problems", profilers,
          cost_s=60, quick_cost_s=5, file="profilers-{date}.json", unavailable=profilers_missing),
    Stage(9, "cnn", "the 10-layer CNN in both layouts, FP32 and mixed precision (Keras)", cnn_layouts,
          cost_s=CNN_COST_S, quick_cost_s=20, file="cnn-layouts-{date}.json", unavailable=keras_missing),
    Stage(10, "feeding", "fit() against batch size on the GPU and the CPU, one-sample calls (Keras)", feeding,
          cost_s=30, quick_cost_s=10, file="feeding-{date}.json", unavailable=keras_missing),
]
