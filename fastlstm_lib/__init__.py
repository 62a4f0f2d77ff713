"""fastlstm_lib: an LSTM in Numba CUDA, made faster one cuDNN optimization at a time.

Importing it picks the device: a real GPU if the CUDA driver sees one, otherwise Numba's CUDA
simulator (switched on here, before numba is imported, and announced in one line at the first
Numba work). Only NumPy and Numba are imported; Keras, TensorFlow, matplotlib and tqdm load when
first used.

The package lists the LSTM first: its own modules (config, params, reference, harness, launches,
timing, ...) and ``kernels``, ``steps``, ``backward``, with ``runtime`` (GPU or simulator). Around
it: ``course`` (the notebooks' exercises and grader ``fl.check``, the profile, the timeline model,
the lessons' checks), ``topics`` (the CNN layouts, notebooks 20-21; data feeding, 30-31; the Keras
layer ``fl.keras_layer.FastLSTM``, 42), ``setup`` (the doctor: ``python -m fastlstm_lib doctor``).
Training (notebooks 40-42): ``fl.reference_backward`` and the backward ladder ``fl.backward``.
"""

from .setup.requirements import missing as _missing

_ABSENT = _missing()  # NumPy or Numba absent: nothing below can load, but the doctor still runs
if _ABSENT:
    from .setup.requirements import refusal as _refusal

    __getattr__ = _refusal(_ABSENT)
else:
    from .runtime.numba_compat import restore_numpy_aliases

    restore_numpy_aliases()  # NumPy 2.5 removed np.row_stack, which numba-cuda names when it first compiles
    # First: decides NUMBA_ENABLE_CUDASIM before numba is imported (a stand-in driver, such as the
    # tests' fake GPU, is loaded before this line by whoever starts it).
    from .runtime import simulator

    if simulator.SIMULATOR:
        simulator.lock_shared_array_allocation()  # a race in the simulator's shared memory
        from .runtime.numba_compat import complete_builtin_simulator

        complete_builtin_simulator()  # numba's own simulator (no numba-cuda, as on macOS) lacks a few calls

    from .runtime.numba_compat import quiet_low_occupancy_warnings

    quiet_low_occupancy_warnings()  # small grids are the course's choice: no warning at each launch on a GPU

    from .runtime.keras_backend import set_tensorflow_defaults

    set_tensorflow_defaults()  # before anything imports TensorFlow (a test's importorskip, a notebook)
    from .config import LSTMConfig, flops
    from .params import GATES, LayerParams, init_params, random_input, validate_input, validate_params
    from .numerics import RTOL, relative_error
    from .reference import matches, reference_forward
    from .runtime.device import DEVICE, device_info, is_simulator
    from . import steps
    from .launches import count_launches, launch_overhead_us
    from .course.article import article_numbers, article_source, ladder_comparison
    from .gpus import fp32_peak_tflops, gpu
    from .results import load_results, save_results
    from .course.results import committed_results, format_table
    from .harness import WrongResultError, bench, bench_steps, host_and_device_times
    # Binds fl.profile to the function (the subpackage stays importable:
    # ``from fastlstm_lib.course.profile import charts``).
    from .course.profile import lower_bound, profile
    from . import backward
    from .backward import reference_backward

    #: Public names whose modules import Keras (or plan for a GPU) and so load on first use: name -> module.
    _LAZY = {
        "params_from_keras": "keras_bridge",  # a list of keras.layers.LSTM -> params
        "keras_forward": "keras_bridge",  # Keras' own LSTM stack on x with params
        "persistent_limits": "kernels.persistent",  # which batch sizes fit the persistent step on a chip
        "check": "course.exercises",  # grade a notebook exercise and print the verdict
        "estimate": "course.timeline",  # an ESTIMATED timeline of a recorded pass on a GPU (blocks on SMs)
        "plot_timeline": "course.timeline",  # that timeline drawn as Nsight Systems draws one
    }

    #: Subpackages reached as ``fl.<name>`` on first use: name -> where it lives.
    _SUBPACKAGES = {"keras_layer": "topics.keras_layer", "exercises": "course.exercises"}

    def __getattr__(name):
        """The names in ``_LAZY``, and the subpackages ``fl.keras_layer`` (it imports Keras) and
        ``fl.exercises``, on first use."""
        import importlib

        if name in _LAZY:
            return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        if name in _SUBPACKAGES:  # fl.exercises.catalog(...) works before fl.check
            return importlib.import_module(f"{__name__}.{_SUBPACKAGES[name]}")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "LSTMConfig", "flops", "GATES", "LayerParams", "init_params", "random_input",
    "validate_input", "validate_params", "reference_forward", "relative_error", "matches",
    "device_info", "is_simulator", "steps", "RTOL", "WrongResultError", "bench", "bench_steps",
    "host_and_device_times", "format_table", "save_results", "load_results", "params_from_keras", "keras_forward",
    "count_launches", "launch_overhead_us", "article_numbers", "article_source", "committed_results",
    "fp32_peak_tflops", "gpu", "ladder_comparison", "persistent_limits", "profile", "lower_bound", "backward", "reference_backward", "check",
    "estimate", "plot_timeline",
]
