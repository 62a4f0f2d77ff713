"""``estimate(profile, gpu, host=..., gemm=...)``: its arguments checked, the model run.

The model is one block's cost (``blocks.py``: its SM time and its time alone, latencies exposed),
the launch's DRAM bytes (``reuse.py``: an LRU L2 over the pass) and the pass's schedule
(``profile/schedule.py``, the lower bound's scheduler, here with an SM's limits: blocks placed on
SMs that hide their latencies by sharing them, the GPU-side launch latency and the resident-grid
limit); its constants are in data/model_constants.csv.
"""

from __future__ import annotations

from ...checks import check_str
from ...gpus import Chip, gpu as gpu_row
from ..profile.bound import checked_host, launch_cost_us
from ..profile.record import Profile
from ..profile.schedule import critical_parts, simulate
from .blocks import block_cost
from .constants import constant
from .reuse import dram_input_bytes
from .result import Estimate, sm_time

GEMMS = ("ours", "cublas")


def estimate(profile, gpu, host="cpp", gemm="ours") -> Estimate:
    """The ESTIMATED time of ``profile``'s pass (``fl.profile(...)``) on ``gpu`` (a name in
    data/gpus.csv), launches issued by ``host`` ("cpp", "python", "measured" or microseconds per
    launch, as for ``fl.lower_bound``), its GEMMs as compiled here (``gemm="ours"``: their
    instructions and latencies from the compiled code, ``blocks.py``) or as cuBLAS ran them
    (``"cublas"``: the same blocks, timed by DeepBench's published cuBLAS times for the shape and
    layout on that GPU: the M40, T4 and V100 only; ``timeline/cublas.py``). Never below
    ``fl.lower_bound`` with the same host.

    TypeError / ValueError name the bad argument. A persistent pass needs a GPU with a grid
    barrier, and its grid planned for that GPU (as ``fl.lower_bound``).
    """
    if not isinstance(profile, Profile):
        raise TypeError(f"profile must be a Profile (fl.profile(...)), got {type(profile).__name__}")
    if not isinstance(gpu, str):
        raise TypeError(f"gpu must be a GPU's name in data/gpus.csv (a str), got {type(gpu).__name__} {gpu!r}")
    try:
        row = gpu_row(check_str("gpu", gpu, example="H100"))
    except ValueError as error:
        raise ValueError(f"gpu: {error}") from error
    host_label = checked_host(host)
    if not isinstance(gemm, str):
        raise TypeError(f"gemm must be one of {GEMMS}, got {type(gemm).__name__} {gemm!r}")
    if gemm not in GEMMS:
        raise ValueError(f"gemm must be one of {GEMMS}, got {gemm!r}")
    chip = Chip.from_row(row)
    if profile.persistent:
        from ...kernels.persistent import require_grid_barrier

        require_grid_barrier(chip)
        if profile.chip != row["name"]:
            raise ValueError(f"the persistent kernel's grid was planned for {profile.chip}, not {row['name']}: "
                             f"profile it with chip={row['name']!r}")
    l2, batch, costs = row["l2_mib"] * 2**20, int(profile.config.get("batch", 1)), {}
    from_dram = dram_input_bytes(profile.launches, l2)

    def cost(launch):  # all of a launch's blocks alike; launches of one shape and kernel alike
        dram = from_dram[launch.index] + max(0.0, launch.footprint_written - l2)
        key = (launch.kernel, launch.grid, launch.block, launch.shared_bytes, launch.flop,
               dram, launch.bytes_read > 0, launch.transpose_b)
        if key not in costs:
            costs[key] = block_cost(launch, row, chip, batch, gemm, profile.config, dram)
        return costs[key]

    sim = simulate(profile.launches, [launch_cost_us(host, launch) * 1e-6 for launch in profile.launches], cost,
                   sms=row["sms"], latency_s=constant("launch_latency_us") * 1e-6,
                   limit=int(constant("max_concurrent_kernels", str(row["compute_capability"]))))
    return Estimate(step=profile.step, gpu=row["name"], host=host_label, gemm=gemm, total_ms=sim["total"] * 1e3,
                    breakdown=critical_parts(sim, ("arithmetic", "memory")), sm_time=sm_time(sim),
                    timeline=tuple(sim["timeline"]), on_sms=tuple(sim["on_sms"]))
