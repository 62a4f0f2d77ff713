"""cuDNN's LSTM through ``torch.nn.LSTM``, with the course's weights, checked and timed like our steps.

The course's weights are Keras' layout (per layer: kernel (input, 4H), recurrent_kernel (H, 4H),
bias (4H,), gates i, f, c, o); torch keeps (4H, input) and (4H, H) with gates i, f, g, o (g is
Keras' c) and two biases, so torch's weights are the transposes and its second bias is zero.
TF32 is switched off (``allow_tf32``, both flags): true FP32, like our kernels. Timed with torch's
CUDA events around each call after a warm-up; checked against the float64 reference before and
after timing, the output poisoned with NaN first. Where torch has no GPU (the rehearsal), the
same code runs on the CPU: values are checked and times mean nothing, and the row says so.
"""

from __future__ import annotations

import datetime

import numpy as np


def torch_lstm(params, device):
    """A ``torch.nn.LSTM`` (batch_first) holding ``params`` (the course's, Keras' layout)."""
    import torch

    layers = len(params)
    lstm = torch.nn.LSTM(params[0].kernel.shape[0], params[0].recurrent_kernel.shape[0], num_layers=layers,
                         batch_first=True).to(device)
    with torch.no_grad():
        for index, layer in enumerate(params):
            getattr(lstm, f"weight_ih_l{index}").copy_(torch.from_numpy(np.ascontiguousarray(layer.kernel.T)))
            getattr(lstm, f"weight_hh_l{index}").copy_(torch.from_numpy(np.ascontiguousarray(layer.recurrent_kernel.T)))
            getattr(lstm, f"bias_ih_l{index}").copy_(torch.from_numpy(layer.bias))
            getattr(lstm, f"bias_hh_l{index}").zero_()
    lstm.flatten_parameters() if device == "cuda" else None
    return lstm


def strict_fp32() -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def device_info() -> dict:
    import torch

    if not torch.cuda.is_available():
        return {"name": "CPU (torch has no GPU here)", "torch": torch.__version__}
    return {"name": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "compute_capability": "%d.%d" % torch.cuda.get_device_capability()}


def _times(call, device, warmup: int, repeats: int) -> list[float]:
    import time

    import torch

    for _ in range(warmup):
        call()
    if device != "cuda":
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            call()
            times.append((time.perf_counter() - start) * 1e3)
        return times
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return times


def bench_torch_lstm(cfg, *, backward: bool = False, tf32: bool = False, warmup: int = 3, repeats: int = 20,
                     seed: int = 0) -> dict:
    """One result in ``fl.bench``'s form for cuDNN's LSTM (``step`` "torch_cudnn", or
    "torch_cudnn_training" with ``backward``: forward + backward of sum(y * dy)). ``tf32``: cuDNN
    and cuBLAS may round to TF32 (``allow_tf32``; step "torch_cudnn_tf32"), checked to the library's
    TF32 tolerance (``numerics.TOLERANCES["tf32"]``) instead of float32's."""
    import torch

    import fastlstm_lib as fl
    from fastlstm_lib.timing import summarize

    strict_fp32()
    if tf32:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    rtol = fl.numerics.TOLERANCES["tf32"] if tf32 else fl.RTOL
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x, params, ref = fl.harness.problem(cfg, seed)
    lstm = torch_lstm(params, device)
    x_t = torch.from_numpy(x).to(device)
    out = torch.full((cfg.batch, cfg.seq_len, cfg.hidden), float("nan"), device=device)
    if backward:
        dy = fl.backward.output_gradient(cfg)
        dx_ref, grads_ref = fl.reference_backward(x, params, dy)
        dy_t = torch.from_numpy(np.ascontiguousarray(dy)).to(device)
        x_t.requires_grad_(True)

    def call():
        if backward:
            lstm.zero_grad(set_to_none=True)
            x_t.grad = None
            y, _ = lstm(x_t)
            y.backward(dy_t)
            out.copy_(y.detach())
        else:
            with torch.no_grad():
                y, _ = lstm(x_t)
                out.copy_(y)

    def check(when: str) -> float:
        """The output's relative error (and with ``backward`` the largest of dx's and the weight
        gradients', each against BACKWARD_RTOL, scaled to be read against RTOL)."""
        out.fill_(float("nan"))
        call()
        if device == "cuda":
            torch.cuda.synchronize()
        error = fl.relative_error(out.cpu().numpy(), ref)
        if not error <= rtol:
            raise RuntimeError(f"cuDNN's LSTM (torch) is wrong {when} timing: relative error {error:.3g} > {rtol:g}")
        if backward:
            found = {"dx": fl.relative_error(x_t.grad.detach().cpu().numpy(), dx_ref)}
            for index, grad in enumerate(grads_ref):
                ours = {"kernel": getattr(lstm, f"weight_ih_l{index}").grad.T,
                        "recurrent_kernel": getattr(lstm, f"weight_hh_l{index}").grad.T,
                        "bias": getattr(lstm, f"bias_ih_l{index}").grad}
                for name, value in ours.items():
                    found[f"layer {index} {name}"] = fl.relative_error(value.detach().cpu().numpy(), getattr(grad, name))
            worst = max(found, key=found.get)
            if not found[worst] <= fl.backward.BACKWARD_RTOL:
                raise RuntimeError(f"cuDNN's LSTM (torch) gradients are wrong {when} timing: {worst} relative error "
                                   f"{found[worst]:.3g} > {fl.backward.BACKWARD_RTOL:g}")
            error = max(error, found[worst] * fl.RTOL / fl.backward.BACKWARD_RTOL)
        return error

    before = check("before")
    times = _times(call, device, warmup, repeats)
    after = check("after")
    time_ms = summarize(times)
    flop = fl.flops(cfg) * (3 if backward else 1)
    step = "torch_cudnn_training" if backward else "torch_cudnn"
    return {"step": step + ("_tf32" if tf32 else ""),
            "title": f"cuDNN's LSTM via torch.nn.LSTM, same weights, TF32 {'on' if tf32 else 'off'}"
                     + (", forward + backward" if backward else ""),
            "config": cfg.as_dict(), "device": device_info(),
            "timing": "torch CUDA events" if device == "cuda" else "wall clock on the CPU: meaningless for a GPU",
            "times_meaningful": device == "cuda", "warmup": warmup, "repeats": repeats, "time_ms": time_ms,
            "flop": flop, "flop_note": "forward GEMM FLOPs x 3 for forward + backward" if backward else "forward GEMM FLOPs",
            "gflops": flop / (time_ms["median"] * 1e-3) / 1e9,
            "relative_error": {"before": before, "after": after, "rtol": rtol,
                               **({"gradients_rtol": fl.backward.BACKWARD_RTOL,
                                   "note": "gradient errors scaled by RTOL / BACKWARD_RTOL"} if backward else {})},
            "values_checked": True, "options": {"tf32": tf32, "timed": "forward+backward" if backward else "forward"},
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
