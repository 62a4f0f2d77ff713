"""The backward ladder measured on a GPU (notebook 41): ``python -m fastlstm_lib.backward``.

At the article's size (hidden 512, batch 64, 100 steps, 4 layers), with TF32 off:

- every backward step through ``fl.bench``, forward + backward and the backward alone, each
  checked against the float64 reference before and after timing;
- Keras' LSTM forward + backward (cuDNN on a GPU) through the same harness, and the ratio of our
  last step's time to it (the course's own goal: at most 1.5x cuDNN's);
- the weight gradient dW = X^T dZ of one layer over every step: one GEMM against one GEMM per
  step (the course's own goal: at least 5x faster), the same kernel both ways, checked against NumPy.

It refuses to run on the simulator, whose times mean nothing. The result file holds the device,
the software versions and every setting.
"""

from __future__ import annotations

import datetime

import numpy as np
from numba import cuda

from ..checks import check_bool, check_int, check_str_list
from ..config import LSTMConfig
from ..runtime.device import DEVICE, device_info
from ..harness import bench
from . import get, names

#: The course's own speed goals (not published figures), recorded with the measurements they judge.
TARGETS = {"forward_backward_vs_cudnn_at_most": 1.5, "weight_gradient_speedup_at_least": 5.0}


def _check_cfg(cfg) -> LSTMConfig:
    if not isinstance(cfg, LSTMConfig):
        raise TypeError(f"cfg must be an LSTMConfig (e.g. LSTMConfig.article()), got {type(cfg).__name__}")
    return cfg


def bench_weight_gradients(cfg: LSTMConfig, *, warmup: int = 3, repeats: int = 20, seed: int = 0) -> dict:
    """dW = X^T dZ of layer 1 (in = H) over all steps: one tall GEMM vs T GEMMs of B rows, accumulating:
    the kernel runner's two weight-gradient cases (``kernels/gemm/launch.weight_gradient_cases``) at
    ``cfg``'s steps, batch and hidden, each checked (the backward tolerance), timed and checked again."""
    from ..kernels import gemm, runner

    _check_cfg(cfg)
    warmup, repeats = check_int("warmup", warmup, minimum=0), check_int("repeats", repeats)
    seed = check_int("seed", seed, minimum=0)
    B, T, H = cfg.batch, cfg.seq_len, cfg.hidden
    cases = gemm.weight_gradient_cases((T, B, H), np.random.default_rng(seed))
    computed = DEVICE.computes  # a stand-in driver runs no kernel
    result = {"shape": f"({H} x {T * B}) @ ({T * B} x {4 * H})", "per_step_launches": T, "all_steps_launches": 1}
    for label, case in cases.items():
        try:
            error = runner.checked(case, check=computed)
        except AssertionError as failure:
            raise RuntimeError(f"the {label} weight gradient is wrong: {failure}") from None
        result[f"{label}_ms"] = runner.timed(case.launch, (1, warmup, repeats))
        result[f"{label}_relative_error"] = error if computed else None
    result["speedup"] = result["per_step_ms"]["median"] / result["all_steps_ms"]["median"]
    return result


def bench_backward(cfg: LSTMConfig | None = None, *, steps=None, keras: bool = True, warmup: int | None = None,
                   repeats: int | None = None, each=None) -> dict:
    """Every measurement above, as one JSON-able dict. GPU only.

    ``each(label, call)``: how each part (a step's timing, the weight gradient, a Keras step) is
    run, returning ``call()``'s result or None to leave that part out; by default each part is
    simply called. The GPU run (tools/gpurun) passes its own: every part within the time left,
    a failure recorded as that part's, the others kept."""
    if cfg is not None:
        _check_cfg(cfg)
    if steps is not None:
        check_str_list("steps", steps, choices=names())
    check_bool("keras", keras)
    warmup = None if warmup is None else check_int("warmup", warmup, minimum=0)
    repeats = None if repeats is None else check_int("repeats", repeats)
    if each is not None and not callable(each):
        raise TypeError(f"each must be a function each(label, call), got {type(each).__name__}")
    if DEVICE.small:
        raise RuntimeError("the backward benchmark needs a GPU: on the CUDA simulator times mean nothing")
    each = each or (lambda label, call: call())
    cfg = LSTMConfig.article() if cfg is None else cfg
    steps = names() if steps is None else [get(name).name for name in steps]
    timing = {"warmup": warmup, "repeats": repeats}
    runs = [each(f"{name} {timed}", lambda name=name, timed=timed: bench(get(name), cfg, timed=timed, **timing))
            for name in steps for timed in ("forward+backward", "backward")]
    report = {"device": device_info(), "config": cfg.as_dict(), "targets": TARGETS,
              "steps": [run for run in runs if run is not None],
              "weight_gradient": each("weight gradient", lambda: bench_weight_gradients(cfg)),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    if keras:
        from ..runtime.keras_backend import environment, set_tf32
        from .keras_training import KERAS_TRAINING

        set_tf32(False)  # true FP32, like our kernels
        report["keras"] = environment()
        report["keras_steps"] = [run for run in (each(f"Keras {step.name}", lambda step=step: bench(step, cfg, **timing))
                                                 for step in KERAS_TRAINING) if run is not None]
        ours = next((r for r in report["steps"] if r["step"] == steps[-1]
                     and r["options"]["timed"] == "forward+backward"), None)
        cudnn = report["keras_steps"][0] if report["keras_steps"] else None
        if ours is not None and cudnn is not None:
            report["forward_backward_vs_cudnn"] = {"ours": ours["step"], "keras": cudnn["step"],
                                                   "ratio": ours["time_ms"]["median"] / cudnn["time_ms"]["median"]}
    return report
