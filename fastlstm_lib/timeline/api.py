"""``estimate(profile, gpu, host=..., gemm=...)``: its arguments checked, the model run.

The model itself is in ``blocks.py`` (one block's cost) and ``schedule.py`` (the timeline);
its constants in data/model_constants.csv.
"""

from __future__ import annotations

from ..checks import check_str
from ..gpus import Chip, gpu as gpu_row
from ..profile.bound import checked_host
from ..profile.record import Profile
from .constants import constant
from .result import Estimate, sm_time
from .schedule import critical_parts, simulate

GEMMS = ("ours", "cublas")


def estimate(profile, gpu, host="cpp", gemm="ours") -> Estimate:
    """The ESTIMATED time of ``profile``'s pass (``fl.profile(...)``) on ``gpu`` (a name in
    data/gpus.csv), launches issued by ``host`` ("cpp", "python", "measured" or microseconds per
    launch, as for ``fl.lower_bound``), its GEMMs as compiled here (``gemm="ours"``: their issue
    efficiency from the compiled main loop) or at cuBLAS's (``"cublas"``: same blocks, at the
    per-SM rate of DeepBench's published cuBLAS time for the nearest shape on that GPU: the M40,
    T4 and V100 only; ``timeline/cublas.py``). Never below ``fl.lower_bound`` with the same host.

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
    if "persistent_layer" in profile.kernels():
        from ..kernels.persistent_plan import require_grid_barrier

        require_grid_barrier(chip)
        if profile.chip != row["name"]:
            raise ValueError(f"the persistent kernel's grid was planned for {profile.chip}, not {row['name']}: "
                             f"profile it with chip={row['name']!r}")
    constants = {"launch_latency_us": constant("launch_latency_us"),
                 "max_concurrent_kernels": constant("max_concurrent_kernels", str(row["compute_capability"]))}
    sim = simulate(profile, row, chip, host, gemm, constants)
    return Estimate(step=profile.step, gpu=row["name"], host=host_label, gemm=gemm, total_ms=sim["total"] * 1e3,
                    breakdown=critical_parts(sim), sm_time=sm_time(sim), timeline=tuple(sim["timeline"]),
                    on_sms=tuple(sim["on_sms"]))
