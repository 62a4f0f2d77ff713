"""What one thread block of a launch costs on one SM of a GPU, and how many fit on an SM.

Per launch (all its blocks alike, so computed once per launch, not per block):

- **residency**: blocks of this kernel one SM holds at once, from its threads, its registers per
  thread on this GPU's architecture (data/kernel_resources.csv, sm_52..sm_90), its shared memory
  (static, from the same table, or the launch's dynamic shared bytes, whichever is larger) and the
  SM's limits (``gpus.occupancy``). 0 means the kernel cannot run on this GPU: ValueError.
- **issue efficiency** e: the fraction of the SM's FP32 peak the kernel's main loop can reach.
  Each of an SM's 4 partitions issues one warp instruction per clock; a warp's FFMA occupies that
  partition's FP32 pipe for 32 / L clocks (L: FP32 lanes per partition, data/model_constants.csv).
  If the loop has F FFMAs among I instructions and every instruction issues with no stall, the
  FP32 pipe is busy a fraction  e = min(1, (F / I) x (32 / L))  of the time. For a blocked GEMM,
  F and I are those of a whole slab of K (``slab_ffma``, ``slab_instructions``: the k loop and the
  cooperative loads times their trips, ``slab_mix`` in tools/compile_matrix/sass.py); for other kernels,
  those of the main loop. sm_52 has no disassembly in the table (no tool reads Maxwell SASS): it
  uses the sm_75 build's mix, the nearest architecture with one; sm_70 (the V100) is not compiled
  at all and uses sm_75's registers and mix. Kernels with no main loop get ``no_loop_efficiency``.
  With ``gemm="cublas"`` the GEMM kernels instead run at the per-SM rate of a published cuBLAS
  measurement (``cublas.py``). No stalls: memory latency not hidden by other warps is not
  modelled, nor is L2 bandwidth, so e is an upper bound.
- **time of one block alone on an SM**: max(arithmetic, memory), where arithmetic =
  (launch FLOPs / blocks) / (e x fp32_tflops / sms) and memory = (launch DRAM bytes / blocks) /
  (DRAM bandwidth / sms): each SM draws its even share of DRAM bandwidth. DRAM bytes are those of
  the lower bound's memory model (``profile/bound.py``): the inputs beyond what L2 can hold plus
  the outputs beyond what L2 can keep; traffic that hits L2 or L1 is not timed (L2 bandwidth is
  not modelled). Blocks sharing an SM share its rate (see ``profile/schedule.py``).
"""

from __future__ import annotations

import dataclasses
import functools

from ..sass import read_table
from ...gpus import Chip, occupancy
from ...kernels.gemm import GPU_LARGE, GPU_SMALL, GPU_WIDE, exact
from ...kernels.versions import every, gemm_names
from . import cublas
from .constants import constant

NO_SASS_FALLBACK = {"sm_52": "sm_75", "sm_70": "sm_75"}  # no disassembly: the nearest architecture's loop mix
#: Architectures of data/gpus.csv the compile matrix does not build (Volta): the nearest one's registers.
NOT_COMPILED = {"sm_70": "sm_75"}
#: The kernel_resources.csv row of each blocking ``gpu_blocking`` picks and each version ``gemm()``
#: launches: the rows the GEMM family's specs mark ``timed`` (kernels/gemm.py).
GEMM_ROWS = {(build.blocking, spec.number): build.row for spec in every() if spec.family == "gemm"
             for build in spec.builds() if build.timed}


@dataclasses.dataclass(frozen=True)
class BlockCost:
    """One launch's per-block figures on one GPU."""

    blocks: int
    threads: int
    per_sm: int  # blocks of it one SM holds at once
    limit: str  # what limits per_sm
    registers: int
    efficiency: float
    arithmetic_s: float  # one block alone on an SM
    memory_s: float

    @property
    def seconds(self) -> float:
        return max(self.arithmetic_s, self.memory_s)

    @property
    def kind(self) -> str:
        """What sets a block's time: "arithmetic" or "memory"."""
        return "arithmetic" if self.arithmetic_s >= self.memory_s else "memory"


@functools.lru_cache(maxsize=1)
def _resources() -> dict:
    return {(row["kernel"], row["arch"]): row for row in read_table()}


def arch_of(row: dict) -> str:
    return "sm_" + str(row["compute_capability"]).replace(".", "")


def table_name(launch, batch: int) -> str:
    """The kernel_resources.csv name of a recorded launch. ``blocked_gemm`` is compiled per
    blocking and version (``GEMM_ROWS``): a launch's grid says which blocking it ran
    (``gpu_blocking`` picks the 128 x 128 patch only where it divides the shape), and its recorded
    version which kernel; a launch recorded without one (0) is 3 where the tile divides the shape,
    else 2."""
    name = launch.kernel.lstrip("_")
    if name == "persistent_layer":
        return f"persistent_b{batch}"
    if name == "blocked_gemm":
        m, n, k = cublas.gemm_shape(launch)
        grid = tuple(launch.grid[:2])
        blocking = next((b for b in (GPU_LARGE, GPU_WIDE) if grid == (-(-n // b.bn), -(-m // b.bm))), GPU_SMALL)
        key = (blocking, launch.version or (3 if exact(blocking, m, n, k) else 2))
        if key not in GEMM_ROWS:
            raise ValueError(f"launch {launch.index}: no compiled row for a {blocking} GEMM of {m} x {n} x {k}")
        return GEMM_ROWS[key]
    return name


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
    """e = min(1, FFMA / instructions x 32 / FP32 lanes per partition), see the module docstring."""
    mix = resource_row(name, NO_SASS_FALLBACK.get(arch, arch))
    if _int(mix.get("slab_instructions")):  # a blocked GEMM: its whole slab of K
        instructions, ffma = _int(mix["slab_instructions"]), _int(mix["slab_ffma"])
    else:
        instructions, ffma = _int(mix["loop_instructions"]), _int(mix["loop_ffma"])
    if instructions == 0 or ffma == 0:
        return constant("no_loop_efficiency")
    lanes = constant("fp32_lanes_per_partition", arch)
    return min(1.0, ffma / instructions * 32.0 / lanes)


def dram_bytes(launch, l2_bytes: float) -> float:
    """The lower bound's DRAM bytes of a launch: what L2 cannot hold of its inputs and outputs."""
    return max(0.0, launch.footprint_in - l2_bytes) + max(0.0, launch.footprint_written - l2_bytes)


def block_cost(launch, row: dict, chip: Chip, batch: int, gemm: str) -> BlockCost:
    """The per-block cost of ``launch`` on the GPU of data/gpus.csv row ``row``."""
    arch = arch_of(row)
    name = table_name(launch, batch)
    resources = resource_row(name, arch)
    threads = launch.block[0] * launch.block[1] * launch.block[2]
    blocks = launch.grid[0] * launch.grid[1] * launch.grid[2]
    registers = _int(resources["registers"], 32)
    shared = max(launch.shared_bytes, _int(resources["static_shared"]))
    per_sm, limit = occupancy(chip, threads, shared, registers)
    if per_sm < 1:
        raise ValueError(f"kernel {launch.kernel} (launch {launch.index}: {threads} threads, {registers} registers, "
                         f"{shared} bytes of shared memory) cannot run on the {row['name']}: {limit}")
    sm_flops = row["fp32_tflops"] * 1e12 / row["sms"]
    if gemm == "cublas" and launch.kernel in gemm_names():
        efficiency = cublas.sm_rate(row["name"], row["sms"], *cublas.gemm_shape(launch))[0] / sm_flops
    else:
        efficiency = issue_efficiency(name, arch)
    sm_bandwidth = row["memory_gb_s"] * 1e9 / row["sms"]
    arithmetic = launch.flop / blocks / (efficiency * sm_flops)
    memory = dram_bytes(launch, row["l2_mib"] * 2**20) / blocks / sm_bandwidth
    return BlockCost(blocks=blocks, threads=threads, per_sm=per_sm, limit=limit, registers=registers,
                     efficiency=efficiency, arithmetic_s=arithmetic, memory_s=memory)
