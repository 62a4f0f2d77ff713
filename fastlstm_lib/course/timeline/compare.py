"""The estimate set beside measurements: the article's M40 times and committed GPU results.
Residual = estimate / measurement.
"""

from __future__ import annotations

from ..article import article_ms, article_numbers
from ...config import LSTMConfig
from ...gpus import find_gpu
from ...steps import names as ladder_names
from ..profile.bound import lower_bound
from ..results import check_results
from ..profile.ladder import GPUS as LADDER_GPUS, HOSTS
from ..profile.record import shared_profile as profile  # read-only here: no copy needed
from .api import estimate


def article_table(gemms=("ours", "cublas")) -> list[dict]:
    """Per published step: the article's M40 time, our estimates (C++ host) with ``gemms`` priced as
    ours or cuBLAS's, their residuals, and the lower bound."""

    cfg = LSTMConfig.article()
    rows = []
    published_ms = article_ms()
    for published in article_numbers():
        step = published["step"]
        p = profile(step, cfg, chip="M40")
        measured_ms = published_ms[step]
        row = {"step": step, "article_ms": measured_ms, "bound_ms": lower_bound(p, "M40", host="cpp").bound_ms}
        for gemm in gemms:
            row[f"{gemm}_ms"] = estimate(p, "M40", host="cpp", gemm=gemm).total_ms
            row[f"{gemm}_residual"] = row[f"{gemm}_ms"] / measured_ms
        rows.append(row)
    return rows


def against_results(results, host="python") -> list[dict]:
    """Every measured ladder step in ``results`` estimated on its GPU, issued by ``host``:
    {"rows": [{step, gpu, measured_ms, estimate_ms, residual, bound_ms}], "left_out": [...]}."""
    rows, left_out = [], []
    for result in check_results("results", results):
        if "skipped" in result:
            left_out.append((result["step"], "skipped"))
            continue
        row = find_gpu(result["device"]["name"])
        if row is None or result["step"] not in ladder_names():
            left_out.append((result["step"], result["device"]["name"]))
            continue
        cfg = LSTMConfig(**result["config"])
        p = profile(result["step"], cfg, chip=row["name"])
        measured = result["time_ms"]["median"]
        e = estimate(p, row["name"], host=host).total_ms
        rows.append({"step": result["step"], "gpu": row["name"], "measured_ms": measured, "estimate_ms": e,
                     "residual": e / measured, "bound_ms": lower_bound(p, row["name"], host=host).bound_ms})
    return {"rows": rows, "left_out": left_out}


def ladder_estimates(gpus=LADDER_GPUS, hosts=HOSTS, chip: str = "M40") -> list[dict]:
    """The article's steps recorded with ``chip``'s geometry, estimated on each GPU and host: keys
    ``"{gpu} {host} ms"`` and ``"{gpu} {host} arithmetic floor ms"`` (arithmetic SM-time over all SMs)."""

    cfg = LSTMConfig.article()
    rows = []
    for published in article_numbers():
        p = profile(published["step"], cfg, chip=chip)
        row = {"step": published["step"]}
        for gpu in gpus:
            sms = find_gpu(gpu)["sms"]
            for host in hosts:
                e = estimate(p, gpu, host=host)
                row[f"{gpu} {host} ms"] = e.total_ms
                row[f"{gpu} {host} arithmetic floor ms"] = e.sm_time["arithmetic_sm_ms"] / sms
        rows.append(row)
    return rows
