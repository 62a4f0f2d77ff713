"""fastlstm_lib: an LSTM in Numba CUDA, made faster one cuDNN optimization at a time.

Importing it picks the device: a real GPU if the CUDA driver sees one, otherwise Numba's CUDA
simulator (switched on here, before numba is imported, and announced in one line). Only NumPy
and Numba are imported; Keras, TensorFlow, matplotlib and tqdm load when first used.
"""

from . import _device  # first: decides NUMBA_ENABLE_CUDASIM before numba is imported

if _device.SIMULATOR:
    from ._simulator import lock_shared_array_allocation

    lock_shared_array_allocation()  # a race in the simulator's shared memory (see _simulator.py)

from .config import LSTMConfig, flops
from .params import GATES, LayerParams, init_params, random_input, validate_input, validate_params
from .reference import matches, reference_forward, relative_error
from .device import device_info, is_simulator
from . import steps
from .launches import count_launches, launch_overhead_us
from .published import article_numbers, article_source, committed_results, fp32_peak_tflops, ladder_comparison
from .harness import (
    RTOL,
    WrongResultError,
    bench,
    bench_batch_sweep,
    bench_steps,
    format_table,
    load_results,
    save_results,
)


def params_from_keras(layers):
    """A list of stacked ``keras.layers.LSTM`` layers -> params (imports Keras on first use)."""
    from .keras_bridge import params_from_keras as convert

    return convert(layers)


def persistent_limits(hidden: int = 512, batches=(1, 4, 16, 64, 128, 256, 512)) -> dict:
    """Which batch sizes fit the persistent step (notebook 09) on this device at ``hidden``, and why not."""
    from .kernels.persistent import limits

    return limits(hidden, batches)


def keras_forward(x, params, **options):
    """Keras' own LSTM stack on ``x`` with ``params`` (imports Keras on first use)."""
    from .keras_bridge import keras_forward as run

    return run(x, params, **options)


__version__ = "0.1.0"

__all__ = [
    "LSTMConfig", "flops", "GATES", "LayerParams", "init_params", "random_input",
    "validate_input", "validate_params", "reference_forward", "relative_error", "matches",
    "device_info", "is_simulator", "steps", "RTOL", "WrongResultError", "bench", "bench_steps", "bench_batch_sweep",
    "format_table", "save_results", "load_results", "params_from_keras", "keras_forward",
    "count_launches", "launch_overhead_us", "article_numbers", "article_source", "committed_results",
    "fp32_peak_tflops", "ladder_comparison", "persistent_limits",
]
