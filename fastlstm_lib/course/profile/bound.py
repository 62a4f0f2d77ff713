"""``fl.lower_bound``: the least time a recorded pass can take on a GPU, from its data sheet
(notebook 02 derives it). ``schedule.py`` schedules each launch as early as its host issue
(data/host_launch_costs.csv) and its dependencies allow, each alone on the whole GPU for
max(FLOP at peak, DRAM bytes at bandwidth: ``dram_bytes``); the bound is the larger of that and
all FLOPs at peak, and ``binding`` names the part that set it.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import numbers
from pathlib import Path

from ...checks import check_number, check_str
from ...gpus import Chip, gpu as gpu_row, peak_tflops
from ...kernels.versions import peak_of
from .graph import longest_path
from .record import Profile
from .schedule import critical_parts, simulate

CSV = Path(__file__).resolve().parents[3] / "data" / "host_launch_costs.csv"


@functools.lru_cache(maxsize=1)
def host_costs() -> dict:
    """{host: {"base_us", "per_array_us", "kind", "source"}} from data/host_launch_costs.csv."""
    with CSV.open() as lines:
        rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    return {row["host"]: {"base_us": float(row["base_us"]), "per_array_us": float(row["per_array_us"]),
                          "kind": row["kind"], "source": row["source"]} for row in rows}


def launch_cost_us(host, launch) -> float:
    """Microseconds the host needs to issue ``launch``: a named host's figures, or ``host`` itself."""
    if isinstance(host, str):
        cost = host_costs()[host]
        return cost["base_us"] + cost["per_array_us"] * launch.array_args
    return float(host)


@dataclasses.dataclass(frozen=True)
class Bound:
    """A lower bound on one pass on one GPU with one host, and the schedule that gives it."""

    step: str
    gpu: str
    host: str
    bound_ms: float
    binding: str  # "host", "flop", "bytes" or "chain"
    terms: dict  # schedule_ms, flop_ms (each launch's FLOPs at its peak: FP32, TF32 on Tensor Cores), host_ms (issuing alone), chain_ms (longest chain alone)
    critical: dict  # the chain that ends last: host_ms (waiting to be issued), chain_ms, bytes_ms
    timeline: tuple  # per launch: {"launch", "kernel", "stream", "issued_ms", "start_ms", "end_ms", "limit"}

    def per_stream(self) -> dict:
        """{stream: [timeline entries, in start order]}."""
        streams: dict = {}
        for entry in sorted(self.timeline, key=lambda e: e["start_ms"]):
            streams.setdefault(entry["stream"], []).append(entry)
        return dict(sorted(streams.items()))


def checked_host(host) -> str:
    if isinstance(host, str) and host in host_costs():
        return host
    if isinstance(host, str) or not isinstance(host, numbers.Real) or isinstance(host, bool):
        raise (ValueError if isinstance(host, str) else TypeError)(
            f"host must be one of {tuple(host_costs())} or microseconds per launch, got {host!r}")
    return f"{check_number('host', host, minimum=0.0):g} us"


def dram_bytes(launch, l2_bytes: float) -> float:
    """A launch's DRAM bytes at least: what an L2 of ``l2_bytes`` cannot hold of its inputs and outputs."""
    return max(0.0, launch.footprint_in - l2_bytes) + max(0.0, launch.footprint_written - l2_bytes)


@dataclasses.dataclass(frozen=True)
class Alone:
    """A launch alone on the whole GPU: its least time (seconds), set by "flop" or "bytes"."""

    seconds: float
    kind: str

    @classmethod
    def of(cls, launch, row: dict) -> "Alone":
        dram = dram_bytes(launch, row["l2_mib"] * 2**20)
        compute = launch.flop / (peak_tflops(row, peak_of(launch.kernel)) * 1e12)  # TF32 on Tensor Cores
        memory = dram / (row["memory_gb_s"] * 1e9)
        return cls(max(compute, memory), "bytes" if memory > compute else "flop")


def checked_pass(profile, gpu) -> dict:
    """The data/gpus.csv row of ``gpu`` for bounding or estimating ``profile``'s pass: TypeError /
    ValueError naming the argument; PersistentLimitError for a persistent pass on a GPU without a
    grid barrier; ValueError where its grid was planned for another GPU."""
    if not isinstance(profile, Profile):
        raise TypeError(f"profile must be a Profile (fl.profile(...)), got {type(profile).__name__}")
    try:
        row = gpu_row(check_str("gpu", gpu, example="H100"))
    except ValueError as error:
        raise ValueError(f"gpu: {error}") from error
    if profile.persistent:
        from ...kernels.persistent import require_grid_barrier  # planning loads on first use

        require_grid_barrier(Chip.from_row(row))
        if profile.chip != row["name"]:
            raise ValueError(f"the persistent kernel's grid was planned for {profile.chip}, not {row['name']}: "
                             f"profile it with chip={row['name']!r}")
    return row


def lower_bound(profile: Profile, gpu: str, host="cpp") -> Bound:
    """The least time ``profile``'s pass can take on ``gpu`` (a name in data/gpus.csv), issued
    by ``host`` ("cpp", "python", "measured" or microseconds per launch); ``checked_pass`` says
    what is refused."""
    row = checked_pass(profile, gpu)
    host_label = checked_host(host)
    alone = [Alone.of(launch, row) for launch in profile.launches]
    sim = simulate(profile.launches, [launch_cost_us(host, launch) * 1e-6 for launch in profile.launches],
                   lambda launch: alone[launch.index])
    schedule = sim["total"]
    flop_time = sum(launch.flop / (peak_tflops(row, peak_of(launch.kernel)) * 1e12) for launch in profile.launches)
    parts = critical_parts(sim, ("flop", "bytes"))
    critical = {"host_ms": parts["host_ms"], "chain_ms": parts["flop_ms"], "bytes_ms": parts["bytes_ms"],
                "launches": parts["launches"]}
    terms = {"schedule_ms": schedule * 1e3, "flop_ms": flop_time * 1e3, "host_ms": sim["issued"] * 1e3,
             "chain_ms": longest_path([launch.deps for launch in profile.launches],
                                      [a.seconds for a in alone])[0] * 1e3}
    if flop_time >= schedule * (1 - 1e-9):  # equal but for rounding (launches one after another, each at peak): the FLOPs
        binding = "flop"
    else:
        binding = max(("host", "chain", "bytes"), key=lambda part: critical[f"{part}_ms"])
    return Bound(step=profile.step, gpu=row["name"], host=host_label, bound_ms=max(schedule, flop_time) * 1e3,
                 binding=binding, terms=terms, critical=critical, timeline=tuple(sim["timeline"]))
