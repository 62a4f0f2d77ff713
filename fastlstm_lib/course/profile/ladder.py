"""The whole ladder profiled and bounded per GPU and host (``ladder_bounds``), and the article's M40
measurements put against the bounds (a measurement below a bound would make the bound wrong)."""

from __future__ import annotations

from ..article import ARTICLE_GPU, article_ms
from ...checks import check_str, check_str_list
from ...config import LSTMConfig
from ...gpus import gpu as gpu_row
from ...kernels.persistent import PersistentLimitError
from ...steps import names as ladder_names
from ...tables import Column, table
from .bound import checked_host, lower_bound
from .record import ladder_step, shared_profile as profile  # read-only: no copy needed

GPUS = ("M40", "T4", "A100", "H100")
HOSTS = ("cpp", "python")


def _profiles_for(step: str, cfg: LSTMConfig, gpus, chip: str) -> tuple:
    """(the profile recorded with ``chip``'s geometry, {gpu: profile to bound it with, or the
    reason it can't run there}). Only the persistent step's plan depends on the GPU."""
    try:
        base = profile(step, cfg, chip=chip)
    except PersistentLimitError as error:
        base = error
    per_gpu = {}
    for gpu in gpus:
        candidate = base
        if isinstance(base, PersistentLimitError) or (base.chip != gpu and base.persistent):
            try:
                candidate = profile(step, cfg, chip=gpu)
            except PersistentLimitError as error:
                candidate = error
        per_gpu[gpu] = candidate
    if isinstance(base, PersistentLimitError):
        base = next((p for p in per_gpu.values() if not isinstance(p, PersistentLimitError)), base)
    return base, per_gpu


def ladder_bounds(gpus=GPUS, hosts=HOSTS, steps=None, cfg: LSTMConfig | None = None, chip: str = ARTICLE_GPU) -> list[dict]:
    """One row per ladder step: launches, FLOPs, bytes, the critical path, and per GPU and host
    ``"{gpu} {host} ms"`` and ``"{gpu} {host} binding"`` (None and "does not fit" where the
    persistent step cannot run, ``"{gpu} reason"`` saying why), and ``article_ms`` for the
    article's steps. Launch geometry is ``chip``'s; the persistent step is planned per GPU."""
    gpus, hosts, steps, cfg = checked_ladder_arguments(gpus, hosts, steps, cfg, chip)
    published = article_ms() if cfg == LSTMConfig.article() else {}
    rows = []
    for step in steps:
        base, per_gpu = _profiles_for(step, cfg, gpus, chip)
        if isinstance(base, PersistentLimitError):
            raise base
        totals, critical = base.totals, base.critical_path()
        row = {"step": step, "launches": totals["launches"], "flop": totals["flop"],
               "bytes_read": totals["bytes_read"], "bytes_written": totals["bytes_written"],
               "footprint": totals["footprint"], "critical_launches": critical["launches"],
               "critical_flop": critical["flop"]}
        for gpu in gpus:
            for host in hosts:
                p = per_gpu[gpu]
                if isinstance(p, PersistentLimitError):
                    row[f"{gpu} {host} ms"], row[f"{gpu} {host} binding"] = None, "does not fit"
                    row[f"{gpu} reason"] = p.reason
                    continue
                b = lower_bound(p, gpu, host)
                row[f"{gpu} {host} ms"], row[f"{gpu} {host} binding"] = b.bound_ms, b.binding
        if step in published:
            row["article_ms"] = published[step]
        rows.append(row)
    return rows


def checked_ladder_arguments(gpus, hosts, steps, cfg, chip) -> tuple:
    """``ladder_bounds``' arguments, each checked (unknown GPUs, hosts, steps): (gpus, hosts, steps, cfg)."""
    gpus = check_str_list("gpus", gpus)
    for gpu in gpus:
        gpu_row(gpu)
    if isinstance(hosts, (str, bytes)) or not isinstance(hosts, (list, tuple)) or not hosts:
        raise (ValueError if isinstance(hosts, (list, tuple)) else TypeError)(
            f"hosts must be a non-empty list of hosts (names or microseconds per launch), got {hosts!r}")
    for host in hosts:
        checked_host(host)
    steps = ladder_names() if steps is None else [ladder_step(step).name for step in check_str_list("steps", steps)]
    if cfg is not None and not isinstance(cfg, LSTMConfig):
        raise TypeError(f"cfg must be an LSTMConfig or None, got {type(cfg).__name__} {cfg!r}")
    gpu_row(check_str("chip", chip, example=ARTICLE_GPU))
    return list(gpus), list(hosts), steps, LSTMConfig.article() if cfg is None else cfg


def article_check(rows: list[dict]) -> list[dict]:
    """The article's steps in ``rows`` (``ladder_bounds``): its M40 time beside our M40 bounds (and
    the H100's where ``rows`` have them). ``consistent``: the measurement does not beat the C++-host
    bound; ``measured_over_bound``: how far from the limit the article was."""
    checked = []
    for row in rows:
        if "article_ms" not in row:
            continue
        cpp = row[f"{ARTICLE_GPU} cpp ms"]
        entry = {"step": row["step"], "article_ms": row["article_ms"], "bound_cpp_ms": cpp,
                 "binding_cpp": row[f"{ARTICLE_GPU} cpp binding"], "bound_python_ms": row[f"{ARTICLE_GPU} python ms"],
                 "measured_over_bound": row["article_ms"] / cpp, "consistent": row["article_ms"] >= cpp}
        for host in HOSTS:
            if f"H100 {host} ms" in row:
                entry[f"H100_{host}_ms"] = row[f"H100 {host} ms"]
        checked.append(entry)
    return checked


def python_cap(rows: list[dict], gpu: str = "H100") -> dict:
    """The fastest any step could be on ``gpu`` with every launch issued from Python (its best
    bound), beside the best with a C++ host: where the Python host caps the ladder."""
    def best(host):
        candidates = [row for row in rows if row.get(f"{gpu} {host} ms") is not None]
        if not candidates:
            raise ValueError(f"no bound for {gpu} with host {host} in these rows")
        return min(candidates, key=lambda row: row[f"{gpu} {host} ms"])

    python, cpp = best("python"), best("cpp")
    return {"gpu": gpu, "python_step": python["step"], "python_ms": python[f"{gpu} python ms"],
            "python_binding": python[f"{gpu} python binding"], "cpp_step": cpp["step"], "cpp_ms": cpp[f"{gpu} cpp ms"],
            "cpp_binding": cpp[f"{gpu} cpp binding"]}


def table_text(rows: list[dict], gpus=GPUS, hosts=HOSTS) -> str:
    """Plain text: one line per step, the bound per GPU and host (ms, and its binding's initial),
    then why a step has no bound ("-") on a GPU."""
    columns = ([Column("step", "<", 16), Column("launches", ">", 9)]
               + [Column(f"{gpu} {host}", ">", 16) for gpu in gpus for host in hosts] + [Column("article M40", ">", 13)])
    cells = []
    for row in rows:
        bounds = []
        for gpu in gpus:
            for host in hosts:
                ms = row.get(f"{gpu} {host} ms")
                bounds.append("-" if ms is None else f"{ms:.2f} ms {row[f'{gpu} {host} binding'][0]}")
        article = f"{row['article_ms']:.2f} ms" if "article_ms" in row else ""
        cells.append([row["step"], row["launches"], *bounds, article])
    lines = [table(columns, cells, sep="")]
    for row in rows:
        lines.extend(f"- = {row['step']} cannot run on {gpu}: {row[f'{gpu} reason']}" for gpu in gpus
                     if f"{gpu} reason" in row)
    lines.append("binding: h = host issuing launches, f = all FLOPs at peak, c = chain of dependent launches, "
                 "b = DRAM bytes")
    lines.append("hosts: cpp = a 2016-era C++ host (4.9 us a launch), python = Numba from Python; both published "
                 "estimates (data/host_launch_costs.csv): a faster host could beat the bound that includes it")
    return "\n".join(lines)
