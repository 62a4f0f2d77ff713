"""``estimate(profile, gpu, host=..., gemm=...)``: its arguments checked, the model run: block costs
(``blocks.py``), DRAM bytes (``reuse.py``) and ``profile/schedule.py`` with an SM's limits.
"""

from __future__ import annotations

from ...gpus import Chip
from ..profile.bound import checked_host, checked_pass, launch_cost_us
from ..profile.schedule import critical_parts, simulate
from .blocks import block_cost
from .constants import constant
from .reuse import dram_input_bytes
from .result import Estimate, sm_time

GEMMS = ("ours", "cublas")


def estimate(profile, gpu, host="cpp", gemm="ours") -> Estimate:
    """The ESTIMATED time of ``profile``'s pass (``fl.profile(...)``) on ``gpu`` (a name in
    data/gpus.csv), launches issued by ``host`` ("cpp", "python", "measured" or microseconds per
    launch), its GEMMs as compiled here (``gemm="ours"``, ``blocks.py``) or timed by DeepBench's
    cuBLAS times (``"cublas"``: the M40, T4 and V100 only, ``cublas.py``). Never below
    ``fl.lower_bound`` with the same host; refused as it refuses (``bound.checked_pass``).
    """
    if not isinstance(gpu, str):
        raise TypeError(f"gpu must be a GPU's name in data/gpus.csv (a str), got {type(gpu).__name__} {gpu!r}")
    row = checked_pass(profile, gpu)
    host_label = checked_host(host)
    if not isinstance(gemm, str):
        raise TypeError(f"gemm must be one of {GEMMS}, got {type(gemm).__name__} {gemm!r}")
    if gemm not in GEMMS:
        raise ValueError(f"gemm must be one of {GEMMS}, got {gemm!r}")
    chip = Chip.from_row(row)
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
