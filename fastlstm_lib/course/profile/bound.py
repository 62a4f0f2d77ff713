"""``fl.lower_bound``: the least time a recorded pass can take on a GPU, from its data sheet.

No run with that host can beat the bound, because each of its parts is something a run cannot
avoid (with ``host=0`` no host time is counted at all: the bound no machine can beat, and the
limit of CUDA Graphs, which replay a pass without the host issuing each launch):

- **host**: the host issues the launches one at a time, in the recorded order, each costing
  ``base_us + per_array_us x array arguments`` (``data/host_launch_costs.csv``: Python through
  Numba, or a C++ host like the article's; or any number of microseconds). Those figures are
  published ESTIMATES from other machines: a bound with a named host holds for a host that
  fast, not for every machine (a modern C++ host may issue faster than the 2016-era 4.9 us).
  A launch cannot start before it is issued. Event records and waits are counted free.
- **one launch**: even alone on the GPU, a launch takes at least max(FLOP / FP32 peak, DRAM
  bytes / DRAM bandwidth). DRAM bytes, the memory model: only L2 survives from one launch to
  the next (the L1 and texture caches keep global data for one kernel at most), and at a
  launch's start L2 holds at most its capacity C of anything. So of the ``footprint_in`` bytes
  the launch must read, at least footprint_in - C come from DRAM; and of the
  ``footprint_written`` bytes it writes, at most C can still sit in L2 when it ends, so at least
  footprint_written - C went to DRAM. Data already in L2 is counted free (L2 bandwidth is not
  modelled), which can only lower the bound. An M40's 3 MiB L2 cannot hold a layer's U
  (4 MiB at hidden 512): a recurrent GEMM moves at least ~1.1 MiB from DRAM. An H100's 50 MiB
  holds all four layers' U (16 MiB): there, only launches touching more than 50 MiB pay DRAM.
- **dependencies**: a launch starts after every launch it depends on (streams, events, the
  legacy default stream) has ended.

Scheduling every launch as early as those allow (start = max(issued, dependencies' ends)) gives
a time no such run can beat, even though overlapping launches here each use the whole GPU. That
is ``schedule.py``'s scheduler with ideal costs (no launch latency, no limit on resident grids,
each launch alone on the whole GPU), the one the timeline model runs with an SM's limits. The
sharing is covered by a separate term: all the FLOPs at the FP32 peak. The bound is the larger
of the two. What binds it: "flop" when the whole pass's arithmetic at peak is the larger;
otherwise the chain of launches that ends last is followed back, and its time is split into
waiting for the host ("host"), launches limited by their arithmetic ("chain") and launches
limited by DRAM ("bytes"): the largest part names the binding.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import numbers
from pathlib import Path

from ...checks import check_number, check_str
from ...gpus import Chip, gpu as gpu_row
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
    terms: dict  # schedule_ms, flop_ms (all FLOPs at peak), host_ms (issuing alone), chain_ms (longest chain alone)
    critical: dict  # the chain that ends last: host_ms (waiting to be issued), chain_ms, bytes_ms
    timeline: tuple  # per launch: {"launch", "kernel", "stream", "issued_ms", "start_ms", "end_ms", "limit"}

    def per_stream(self) -> dict:
        """{stream: [timeline entries, in start order]}."""
        streams: dict = {}
        for entry in sorted(self.timeline, key=lambda e: e["start_ms"]):
            streams.setdefault(entry["stream"], []).append(entry)
        return dict(sorted(streams.items()))

    def to_dict(self, timeline: bool = False) -> dict:
        record = {"step": self.step, "gpu": self.gpu, "host": self.host, "bound_ms": self.bound_ms,
                  "binding": self.binding, "terms": self.terms, "critical": self.critical}
        if timeline:
            record["timeline"] = list(self.timeline)
        return record


def checked_host(host) -> str:
    if isinstance(host, str):
        if host not in host_costs():
            raise ValueError(f"host must be one of {tuple(host_costs())} or microseconds per launch, got {host!r}")
        return host
    if not isinstance(host, numbers.Real) or isinstance(host, bool):
        raise TypeError(f"host must be one of {tuple(host_costs())} or microseconds per launch, got {host!r}")
    return f"{check_number('host', host, minimum=0.0):g} us"


@dataclasses.dataclass(frozen=True)
class Alone:
    """A launch alone on the whole GPU: the least time it takes (seconds), and whether its FLOPs
    at the FP32 peak ("flop") or its DRAM bytes at full bandwidth ("bytes") set it."""

    seconds: float
    kind: str

    @classmethod
    def of(cls, launch, row: dict) -> "Alone":
        l2 = row["l2_mib"] * 2**20
        dram = max(0.0, launch.footprint_in - l2) + max(0.0, launch.footprint_written - l2)
        compute, memory = launch.flop / (row["fp32_tflops"] * 1e12), dram / (row["memory_gb_s"] * 1e9)
        return cls(max(compute, memory), "bytes" if memory > compute else "flop")


def lower_bound(profile: Profile, gpu: str, host="cpp") -> Bound:
    """The least time ``profile``'s pass can take on ``gpu`` (a name in data/gpus.csv), issued
    by ``host`` ("cpp", "python", "measured" or microseconds per launch). See the module docstring.

    A pass of the persistent step has no bound on a GPU that cannot launch a cooperative grid
    (the M40): PersistentLimitError says why."""
    if not isinstance(profile, Profile):
        raise TypeError(f"profile must be a Profile (fl.profile(...)), got {type(profile).__name__}")
    row = gpu_row(check_str("gpu", gpu, example="H100"))
    host_label = checked_host(host)
    if profile.persistent:
        from ...kernels.persistent import require_grid_barrier  # planning loads on first use

        require_grid_barrier(Chip.from_row(row))  # PersistentLimitError: no grid barrier on this GPU (M40)
    if profile.persistent and profile.chip != row["name"]:  # its grid is planned per chip
        raise ValueError(f"the persistent kernel's grid was planned for {profile.chip}, not {row['name']}: "
                         f"profile it with chip={row['name']!r}")
    alone = [Alone.of(launch, row) for launch in profile.launches]
    sim = simulate(profile.launches, [launch_cost_us(host, launch) * 1e-6 for launch in profile.launches],
                   lambda launch: alone[launch.index])
    schedule = sim["total"]
    flop_time = sum(launch.flop for launch in profile.launches) / (row["fp32_tflops"] * 1e12)
    parts = critical_parts(sim, ("flop", "bytes"))
    critical = {"host_ms": parts["host_ms"], "chain_ms": parts["flop_ms"], "bytes_ms": parts["bytes_ms"],
                "launches": parts["launches"]}
    terms = {"schedule_ms": schedule * 1e3, "flop_ms": flop_time * 1e3, "host_ms": sim["issued"] * 1e3,
             "chain_ms": longest_path([launch.deps for launch in profile.launches],
                                      [a.seconds for a in alone])[0] * 1e3}
    if flop_time >= schedule:
        binding = "flop"
    else:
        binding = max(("host", "chain", "bytes"), key=lambda part: critical[f"{part}_ms"])
    return Bound(step=profile.step, gpu=row["name"], host=host_label, bound_ms=max(schedule, flop_time) * 1e3,
                 binding=binding, terms=terms, critical=critical, timeline=tuple(sim["timeline"]))
