"""Keras' own LSTM layer as steps of the same registry, timed by the same harness (notebook 10).

``fl.steps.get("keras_cudnn")`` etc. are ``LSTMStep``s: same weights, same input, checked
against the float64 reference before and after timing. Three ways of running
``keras.layers.LSTM`` (Keras 3 uses cuDNN by itself when it can):

- ``keras_cudnn``: ``use_cudnn="auto"``: cuDNN on a GPU, the generic implementation elsewhere;
- ``keras_generic``: ``use_cudnn=False``: Keras' generic LSTM (a loop of matmuls and ops);
- ``keras_recurrent_dropout``: ``recurrent_dropout=0.1``, which makes the layer ineligible for
  cuDNN (the old ``CuDNNLSTM`` had no dropout at all). At inference the dropout is off, so the
  result is still exact: what changes is only which implementation runs.

What differs from our steps is where the work runs: on the backend's own streams, not Numba's.
So ``KerasRunner`` times with a wall clock around a call that ends by waiting for the backend.
That clock includes the Python and framework overhead of issuing the call, which CUDA events
around our launches do not see (see notebook 10). Keras is imported on first use.
"""

from __future__ import annotations

import numpy as np

from ..config import LSTMConfig
from ..runtime.keras_backend import backend_device, compiled_inference, import_keras, tf32_enabled, wait_for
from ..params import validate_input
from ..timing import wall_times
from .base import REAL_REPEATS, LSTMStep, Runner, reject_options


class KerasRunner(Runner):
    """``launch()`` runs the Keras stack once; ``result()`` is (B, T, H) float32 on the host."""

    timing = "wall clock around a synchronised call"
    times_meaningful = True  # Keras runs on real hardware, even beside the simulator

    def __init__(self, step, cfg: LSTMConfig, call, x):
        super().__init__(step, cfg, state=call, x_device=x, out_device=None)

    def default_repeats(self) -> tuple[int, int]:
        return REAL_REPEATS

    def poison(self) -> None:
        self.out = None  # every launch computes a fresh output

    def launch(self) -> None:
        self.out = self.state(self.x)

    def time(self, warmup: int, repeats: int) -> list[float]:
        return wall_times(self.launch, warmup=warmup, repeats=repeats, synchronize=lambda: wait_for(self.out))

    time_issue_and_run = None  # Keras queues its work on its backend's streams, out of Numba's sight

    def result(self) -> np.ndarray:
        if self.out is None:
            raise RuntimeError("nothing launched")
        return np.asarray(import_keras().ops.convert_to_numpy(self.out), dtype=np.float32)


class KerasLSTM(LSTMStep):
    """A stack of ``keras.layers.LSTM`` with our weights, as a step the harness can time."""

    #: Computes with TensorFlow on the CPU (or its GPU), never in Numba's simulator.
    simulated = False

    def __init__(self, name: str, title: str, **layer_options):
        self.name = name
        self.title = title
        self.layer_options = layer_options

    def runner(self, x: np.ndarray, params, **options) -> KerasRunner:
        from ..keras_bridge import keras_lstm_stack

        reject_options(self, options)
        x, params, cfg = validate_input(x, params)
        model = keras_lstm_stack(params, **self.layer_options)
        return KerasRunner(self, cfg, compiled_inference(model), import_keras().ops.convert_to_tensor(x))

    def device(self) -> dict:
        from ..runtime.numba_compat import package_version

        where = backend_device()
        info = super().device()
        info.update(name=where["name"], simulator=False, keras_backend=where["backend"],
                    keras=package_version("keras"), tf32=tf32_enabled())
        return info

    def __repr__(self) -> str:
        return f"<Keras {self.name!r}: {self.title}>"


KERAS_STEPS = [
    KerasLSTM("keras_cudnn", "keras.layers.LSTM, use_cudnn='auto' (cuDNN on a GPU)", use_cudnn="auto"),
    KerasLSTM("keras_generic", "keras.layers.LSTM, use_cudnn=False (generic implementation)", use_cudnn=False),
    KerasLSTM("keras_recurrent_dropout", "keras.layers.LSTM, recurrent_dropout=0.1 (not eligible for cuDNN)",
              recurrent_dropout=0.1),
]


def train_step_times(params, x, *, use_cudnn="auto", warmup: int = 2, repeats: int = 5, seed: int = 0) -> dict:
    """One training step (``train_on_batch``: forward, MSE loss, backward, SGD update) of the LSTM
    stack, timed after warm-up. Also returns the weights after the first step, so that two ways of
    computing it (cuDNN and generic) can be shown to do the same math."""
    from ..keras_bridge import keras_lstm_stack
    from ..timing import summarize

    x, params, cfg = validate_input(x, params)
    if warmup < 0 or repeats < 1:
        raise ValueError(f"need warmup >= 0 and repeats >= 1, got warmup={warmup}, repeats={repeats}")
    keras = import_keras()
    target = np.random.default_rng(seed).uniform(-0.5, 0.5, (cfg.batch, cfg.seq_len, cfg.hidden)).astype(np.float32)
    model = keras_lstm_stack(params, use_cudnn=use_cudnn)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse")
    first_loss = float(model.train_on_batch(x, target))
    weights_after_one_step = [w.copy() for w in model.get_weights()]
    # The loss as a Python float waits for the step, so the clock needs no other synchronisation.
    times = wall_times(lambda: float(model.train_on_batch(x, target)), warmup=warmup, repeats=repeats)
    return {"use_cudnn": use_cudnn, "first_loss": first_loss, "weights_after_one_step": weights_after_one_step,
            "time_ms": summarize(times), "repeats": repeats, "warmup": warmup}
