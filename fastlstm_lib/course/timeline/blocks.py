"""What one thread block of a launch costs on one SM of a GPU, and how many fit on an SM
(notebook 12): ``per_sm`` (``gpus.occupancy``), ``seconds`` and ``latency_s`` (alone on an idle
SM: ``alone_cycles``), from data/kernel_resources.csv, data/gpus.csv and
data/model_constants.csv. sm_52 and sm_70 borrow sm_75's counts (``NO_SASS_FALLBACK``).

A block's SM time (``seconds``) is the longest of what the SM spends on it: its instructions at
the issue rate its resident warps allow (``issue_rate``: a partition with few warps issues only
as often as their dependency chains let it), its FLOPs at the FP32 peak (the TF32 Tensor Cores' for
GEMM version 9: ``Spec.peak``, its loop's ``mma`` counted by ``mma_work``), its shared-memory
wavefronts at one a clock (``shared_wavefronts``: where the compile matrix measured them), and its bytes at the SM's share of the DRAM
and of the L2 bandwidth (``reuse.py`` decides which bytes come from where; no L2 figure is
priced where no measurement of the architecture was found). The persistent kernel's grid barrier
is priced from the latencies of the instructions it is made of (``barrier_cycles``).
"""

from __future__ import annotations

import dataclasses
import functools
import math

from ..sass import read_table
from ...gpus import Chip, occupancy, peak_tflops
from ..profile.bound import dram_bytes  # noqa: F401  (notebook 02 imports it from here)
from ...kernels.gemm import GPU_LARGE, GPU_SMALL, GPU_WIDE
from ...kernels.mma import K as MMA_K, M as MMA_M, N as MMA_N
from ...kernels.versions import every, family_of, peak_of, spec_of
from . import cublas
from .constants import constant

NO_SASS_FALLBACK = {"sm_52": "sm_75", "sm_70": "sm_75"}  # no disassembly: the nearest architecture's loop mix
#: Architectures of data/gpus.csv the compile matrix does not build (Volta): the nearest one's registers.
NOT_COMPILED = {"sm_70": "sm_75"}
#: The kernel_resources.csv row of each GEMM kernel for each blocking ``gpu_blocking`` picks: the
#: rows its version file marks ``timed`` (kernels/gemm/v<N>_*.py).
GEMM_ROWS = {(build.blocking, spec.name): build.row for spec in every() if spec.family == "gemm"
             for build in spec.builds() if build.timed}


@dataclasses.dataclass(frozen=True)
class BlockCost:
    """One launch's per-block figures on one GPU (all its blocks alike)."""

    blocks: int
    threads: int
    per_sm: int  # blocks of it one SM holds at once, alone
    limit: str  # what limits per_sm
    registers: int
    efficiency: float  # fraction of the SM's peak (FP32, or TF32 for a Tensor-Core kernel) while it runs this block only
    arithmetic_s: float  # SM time its instructions take to issue (at the resident warps' rate) or its FLOPs at its peak
    memory_s: float  # SM time of its DRAM bytes at the SM's share of the bandwidth
    alone_s: float = 0.0  # one block alone on an idle SM: its latencies exposed (>= seconds)
    warps: int = 1
    shared_s: float = 0.0  # SM time of its shared-memory wavefronts, one a clock
    l2_s: float = 0.0  # SM time of its bytes served by L2 at the SM's share of the L2 bandwidth (0: unpriced)

    @property
    def seconds(self) -> float:
        """SM time the block takes, however many others share the SM (the module docstring)."""
        return max(self.arithmetic_s, self.shared_s, self.memory_s, self.l2_s)

    @property
    def kind(self) -> str:
        """What sets a block's SM time: "arithmetic" (issue, FP32 or shared memory: the SM's own
        pipes) or "memory" (DRAM or L2 bandwidth)."""
        return "arithmetic" if max(self.arithmetic_s, self.shared_s) >= max(self.memory_s, self.l2_s) else "memory"

    @property
    def latency_s(self) -> float:
        """One block alone, at least its SM time: what several blocks sharing an SM overlap."""
        return max(self.alone_s, self.seconds)


@functools.lru_cache(maxsize=1)
def _resources() -> dict:
    return {(row["kernel"], row["arch"]): row for row in read_table()}


def arch_of(row: dict) -> str:
    return "sm_" + str(row["compute_capability"]).replace(".", "")


def table_name(launch, batch: int) -> str:
    """The kernel_resources.csv name of a recorded launch: per batch for the persistent kernels
    (``Spec.batch_row``), per blocking for a blocked GEMM (``GEMM_ROWS``, from its grid)."""
    spec = spec_of(launch.kernel)
    if spec is not None and spec.batch_row is not None:
        return spec.batch_row.format(batch=batch)
    name = launch.kernel.lstrip("_")
    if name in {kernel for _, kernel in GEMM_ROWS}:
        blocking = gemm_blocking(launch)
        if (blocking, name) not in GEMM_ROWS:
            m, n, k = cublas.gemm_shape(launch)
            raise ValueError(f"launch {launch.index}: no compiled row for a {blocking} {name} of {m} x {n} x {k}")
        return GEMM_ROWS[blocking, name]
    return name


def gemm_blocking(launch):
    """The blocking a recorded GEMM launch ran, from its grid: a 64 x 64 or 128 x 128 patch where the
    grid is that patch's, else the 32 x 32 one."""
    m, n, _ = cublas.gemm_shape(launch)
    grid = tuple(launch.grid[:2])
    return next((b for b in (GPU_LARGE, GPU_WIDE) if grid == (-(-n // b.bn), -(-m // b.bm))), GPU_SMALL)


def resource_row(name: str, arch: str) -> dict:
    """The kernel_resources.csv row of ``name`` (``table_name``) on ``arch``."""
    table = _resources()
    arch = NOT_COMPILED.get(arch, arch)
    if (name, arch) not in table:
        raise ValueError(f"data/kernel_resources.csv has no row for kernel {name!r} on {arch}")
    return table[(name, arch)]


def _int(value, default=0) -> int:
    return int(value) if value not in (None, "") else default


def issue_efficiency(name: str, arch: str) -> float:
    """min(1, FFMA / instructions x 32 / FP32 lanes per partition) of a kernel's slab (a blocked
    GEMM) or main loop: the share of the FP32 peak its instructions allow; 1 without FFMA."""
    mix = resource_row(name, NO_SASS_FALLBACK.get(arch, arch))
    if _int(mix.get("slab_instructions")):  # a blocked GEMM: its whole slab of K
        instructions, ffma = _int(mix["slab_instructions"]), _int(mix["slab_ffma"])
    else:
        instructions, ffma = _int(mix["loop_instructions"]), _int(mix["loop_ffma"])
    if instructions == 0 or ffma == 0:
        return 1.0
    lanes = constant("fp32_lanes_per_partition", arch)
    return min(1.0, ffma / instructions * 32.0 / lanes)


def gpu_clock_hz(row: dict) -> float:
    """The SM clock a GPU's data-sheet FP32 peak implies: peak / (2 FLOP x its FP32 lanes)."""
    lanes = 4 * constant("fp32_lanes_per_partition", arch_of(row)) * row["sms"]
    return row["fp32_tflops"] * 1e12 / (2.0 * lanes)


@functools.lru_cache(maxsize=None)
def _latencies(name: str, arch: str, clock_hz: float) -> dict:
    scale = clock_hz / (constant("latency_clock_mhz", arch) * 1e6)  # memory latencies: through nanoseconds
    return {"ffma": constant("ffma_latency", arch), "shared": constant("shared_latency", arch),
            "l2": constant("l2_latency", arch) * scale, "dram": constant("dram_latency", arch) * scale}


def latencies(row: dict) -> dict:
    """Cycles at this GPU's clock of a dependent FFMA, a shared load, an L2 hit and a DRAM access."""
    return dict(_latencies(row["name"], arch_of(row), gpu_clock_hz(row)))


@dataclasses.dataclass(frozen=True)
class Work:
    """What each warp of a block issues and waits for (data/kernel_resources.csv): ``iterations``
    trips of ``instructions``, ``ffma`` of them FFMAs, ``chain`` dependent FFMAs in a row; of the
    instructions, ``dependent`` outside any loop the matrix measures chains in (each assumed to wait
    for the one before: one per dependent-FFMA latency); ``wavefronts`` shared-memory wavefronts;
    loads used ``distance`` instructions after issue; a shared round where ``shared``; ``extra``
    cycles of latency."""

    iterations: float
    instructions: float
    ffma: float
    chain: float
    distance: float
    shared: bool
    extra: float = 0.0
    dependent: float = 0.0
    wavefronts: float = 0.0


def shared_wavefronts(mix: dict, ffma: float) -> float:
    """Shared-memory wavefronts of a warp issuing ``ffma`` FFMAs of its main loop: the compile
    matrix's ``loop_shared_wavefronts_per_ffma`` (measured from the addresses each lane reads, the
    same on every architecture) times ``ffma``; 0 where the kernel has no figure (the persistent
    kernels, GEMM versions 2, 4 and 9, the element-wise kernels): their shared memory is not priced."""
    figure = mix.get("loop_shared_wavefronts_per_ffma")
    return float(figure) * ffma if figure not in (None, "") else 0.0


def issue_rate(work: Work, resident_warps: float, lat: dict) -> float:
    """The share of a partition's clocks it can issue in with ``resident_warps`` warps like
    ``work``'s: each warp needs, per iteration, its FFMA chain's latency or its instructions, and
    each ``dependent`` instruction's latency; the partition issues at most one a clock."""
    own = max(work.instructions - work.dependent, work.chain * lat["ffma"]) + work.dependent * lat["ffma"]
    return min(1.0, resident_warps * work.instructions / own) if own > 0 else 1.0


def barrier_cycles(blocks: int, lat: dict) -> float:
    """A grid barrier across ``blocks`` blocks, one thread each: the arriving atomic (L2 trips of
    ``atomic_latency_l2_trips``), the arrivals at one address served one after another
    (``same_address_atomic_cycles``), then the load that sees the last arrival (an L2 trip). The
    fences around it are not priced: no published latency."""
    return (constant("atomic_latency_l2_trips") * lat["l2"] + (blocks - 1) * constant("same_address_atomic_cycles")
            + lat["l2"])


def gemm_work(launch, mix: dict) -> Work:
    """A blocked GEMM's slab (``slab_mix``), ``k / (parts x bk)`` of them per block."""
    m, n, k = cublas.gemm_shape(launch)
    blocking = gemm_blocking(launch)
    loop_ffma = _int(mix["loop_ffma"]) or 1
    trips = _int(mix["slab_ffma"]) / loop_ffma
    return Work(iterations=k / (launch.grid[2] * blocking.bk), instructions=_int(mix["slab_instructions"]),
                ffma=_int(mix["slab_ffma"]), chain=_int(mix["loop_ffma_chain"]) * trips,
                distance=_int(mix["load_use_distance"]), shared=True,
                wavefronts=shared_wavefronts(mix, _int(mix["slab_ffma"])))


def mma_work(launch, mix: dict, warps: int) -> Work:
    """A Tensor-Core GEMM (``loop_hmma`` > 0: version 9): its main loop, as many trips per warp as
    its FLOPs need at 2 x M x N x K (2,048) an ``mma`` m16n8k8 (``kernels.mma``'s shape). Its FLOPs
    are priced at the TF32 peak (``block_cost``); the ``mma``'s own latency and the shared
    wavefronts of its fragment loads are not priced (no published figure; no measured column)."""
    blocks = launch.grid[0] * launch.grid[1] * launch.grid[2]
    trips = launch.flop / (blocks * warps * _int(mix["loop_hmma"]) * 2 * MMA_M * MMA_N * MMA_K)
    return Work(iterations=trips, instructions=_int(mix["loop_instructions"]), ffma=0, chain=0,
                distance=_int(mix["load_use_distance"]), shared=True)


def persistent_work(launch, mix: dict, config: dict, lat: dict, l2_per_clock: float = 0.0) -> Work:
    """The persistent kernel: one iteration per time step, h_{t-1} staged from L2 (its rounds'
    latency, or all of h at ``l2_per_clock``, the SM's share of the L2 bandwidth in bytes a clock,
    whichever is longer) and one grid barrier per step (``barrier_cycles``). Every instruction
    outside its main loop (the prologue's too: an upper bound) issued once a step, each waiting for
    the one before (``Work.dependent``)."""
    steps, batch, hidden = config["seq_len"], config["batch"], config["hidden"]
    threads = launch.block[0] * launch.block[1] * launch.block[2]
    warps = math.ceil(threads / 32)
    blocks = launch.grid[0] * launch.grid[1] * launch.grid[2]
    ffma = launch.flop / (2 * 32 * warps * blocks * steps)  # per warp per step
    trips = ffma / (_int(mix["loop_ffma"]) or 1)
    staged = spec_of(launch.kernel).staged_floats
    per_load = staged if hidden % staged == 0 else 1
    rounds = math.ceil(batch * hidden / per_load / threads / max(1, _int(mix["staged_loads"], 1)))
    outside = max(0, _int(mix["instructions"]) - _int(mix["loop_instructions"]))
    return Work(iterations=steps, instructions=trips * _int(mix["loop_instructions"]) + outside, ffma=ffma,
                chain=trips * _int(mix["loop_ffma_chain"]), distance=_int(mix["load_use_distance"]), shared=True,
                extra=max((rounds - 1) * lat["l2"], 4.0 * batch * hidden / l2_per_clock if l2_per_clock else 0.0)
                + barrier_cycles(blocks, lat), dependent=outside,
                wavefronts=shared_wavefronts(mix, ffma))


def plain_work(launch, mix: dict) -> Work:
    """Any other kernel (element-wise): run once, every instruction of it counted once (its
    untaken branches too: an upper bound) and each waiting for the one before, its loads' latency
    exposed by what follows them."""
    return Work(iterations=1, instructions=_int(mix["instructions"]), ffma=0, chain=0,
                distance=_int(mix["load_use_distance"]) if launch.bytes_read else 0, shared=False,
                dependent=_int(mix["instructions"]))


def alone_cycles(work: Work, per_partition: int, lanes: float, lat: dict, memory: float) -> float:
    """One block alone on an SM, in cycles: per iteration, the memory latency its warps do not cover,
    a shared round, then its issue at the rate its ``per_partition`` warps allow (``issue_rate``),
    its FFMAs at the FP32 lanes' rate, or its shared wavefronts, whichever is longest."""
    exposed = max(0.0, memory - work.distance * per_partition) if work.distance else 0.0
    issue = per_partition * work.instructions / issue_rate(work, per_partition, lat)
    waves = 4 * per_partition * work.wavefronts / constant("shared_wavefronts_per_clock")
    pipes = max(issue, per_partition * work.ffma * 32.0 / lanes, waves)
    one = exposed + (lat["shared"] if work.shared else 0.0) + pipes + work.extra
    return work.iterations * one + ((memory - exposed) if work.distance else 0.0)


def block_cost(launch, row: dict, chip: Chip, batch: int, gemm: str, config: dict | None = None,
               dram: float | None = None) -> BlockCost:
    """The per-block cost of ``launch`` on the GPU of data/gpus.csv row ``row``; ``dram``: its DRAM
    bytes (``reuse.py``'s; None: the lower bound's, ``dram_bytes``)."""
    arch = arch_of(row)
    name = table_name(launch, batch)
    resources = resource_row(name, arch)
    mix = resource_row(name, NO_SASS_FALLBACK.get(arch, arch))
    threads = launch.block[0] * launch.block[1] * launch.block[2]
    blocks = launch.grid[0] * launch.grid[1] * launch.grid[2]
    registers = _int(resources["registers"], 32)
    shared = max(launch.shared_bytes, _int(resources["static_shared"]))
    per_sm, limit = occupancy(chip, threads, shared, registers)
    if per_sm < 1:
        raise ValueError(f"kernel {launch.kernel} (launch {launch.index}: {threads} threads, {registers} registers, "
                         f"{shared} bytes of shared memory) cannot run on the {row['name']}: {limit}")
    clock, lanes, lat = gpu_clock_hz(row), constant("fp32_lanes_per_partition", arch), latencies(row)
    sm_flops = peak_tflops(row, peak_of(launch.kernel)) * 1e12 / row["sms"]
    warps = math.ceil(threads / 32)
    dram = dram_bytes(launch, row["l2_mib"] * 2**20) if dram is None else dram
    memory = dram / blocks / (row["memory_gb_s"] * 1e9 / row["sms"])
    family = family_of(launch.kernel)
    if family == "gemm" and gemm == "cublas":
        alone, issued = cublas.gemm_times(row["name"], cublas.layout_of(launch), *cublas.gemm_shape(launch))
        waves = math.ceil(blocks / (per_sm * row["sms"]))
        arithmetic, alone = issued / blocks * row["sms"], alone / waves
        shared_s = 0.0  # DeepBench's times include cuBLAS's own shared memory
    else:
        if family == "gemm" and _int(mix.get("loop_hmma")):
            work = mma_work(launch, mix, warps)
        elif family == "gemm":
            work = gemm_work(launch, mix)
        elif family == "persistent":
            l2_share = constant("l2_gb_s_per_sm", arch)
            work = persistent_work(launch, mix, config or {"seq_len": 1, "batch": batch, "hidden": 1}, lat,
                                   0.0 if math.isnan(l2_share) else l2_share * 1e9 / clock)
        else:
            work = plain_work(launch, mix)
        level = lat["dram"] if dram > 0 and family != "persistent" else lat["l2"]
        resident = min(per_sm, math.ceil(blocks / row["sms"])) * warps / 4.0  # warps per partition
        rate = issue_rate(work, resident, lat)
        arithmetic = max(work.iterations * warps * work.instructions / 4.0 / rate / clock,
                         work.iterations * warps * work.ffma * 32.0 / lanes / 4.0 / clock,
                         launch.flop / blocks / sm_flops)
        shared_s = work.iterations * warps * work.wavefronts / constant("shared_wavefronts_per_clock") / clock
        alone = alone_cycles(work, math.ceil(warps / 4), lanes, lat, level) / clock
    l2 = l2_seconds(launch, row, arch, blocks, dram)
    busiest = max(arithmetic, shared_s, memory, l2)
    efficiency = launch.flop / blocks / (busiest * sm_flops) if busiest else 1.0
    return BlockCost(blocks=blocks, threads=threads, per_sm=per_sm, limit=limit, registers=registers,
                     efficiency=efficiency, arithmetic_s=arithmetic, memory_s=memory, alone_s=alone, warps=warps,
                     shared_s=shared_s, l2_s=l2)


def l2_seconds(launch, row: dict, arch: str, blocks: int, dram: float) -> float:
    """SM time of a block's share of the bytes its launch moves that L2 serves (all it loads and
    stores but its DRAM bytes) at the SM's share of the architecture's measured L2 bandwidth
    (``l2_gb_s_per_sm``); 0 where no measurement was found (not priced: NaN in the table)."""
    per_sm = constant("l2_gb_s_per_sm", arch)
    if math.isnan(per_sm):
        return 0.0
    return max(0.0, launch.bytes_read + launch.bytes_written - dram) / blocks / (per_sm * 1e9)
