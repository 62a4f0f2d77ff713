"""Feeding data to Keras: where the time goes between a dataset and a training step (notebooks 30-31).

``import fastlstm_lib.topics.feeding as feeding`` gives every name below; Keras, TensorFlow and
matplotlib load only inside the functions that use them. The modules, by job:

- ``dataset``: the work in a batch (``python_work``, ``make_batch``) and the slow dataset
  (``SlowBatches``, a ``keras.utils.PyDataset``; ``slow_dataset``, ``parse_feeder``).
- ``timeline``: when each batch was made and each step trained (``Timeline``), and reading it
  (``epoch_seconds``, ``phase_seconds``, ``epoch_phases``, ``production_ms``, ``timeline_problems``,
  ``plot_timeline``).
- ``training``: the model (``small_model``), ``feed_and_train`` (fit), ``train_in_a_loop``
  (no fit: the yardstick) and ``train_step_ms``.
- ``gil``: the GIL made measurable (``threads_take_turns``, ``gil_handoff_us``, ``switch_interval``).
- ``feeders``: feeders compared (``compare_feeders``, ``summarize_feeders``, ``enqueue_all``,
  ``tf_data_pipeline``, ``speed_words``), and whether the machine was idle meanwhile (``idle_check``).
- ``isolation``: child processes with a time limit (``run_isolated``, ``run_script``).
- ``batch_size``: samples/s against batch size (``training_throughput``, ``step_cost_line``).
- ``small_calls``: one-sample inference, each way (``single_sample_callers``, ``small_call_latency``).
- ``threads``: OS threads and TensorFlow's thread settings (``thread_count``, ``time_matmuls``,
  ``tf_thread_probe``).
- ``profiling``: cProfile made readable, on the article's slow generator.
- ``spawn``: what the *spawn* start method asks of code (``call_in_spawned_process``).
- ``keras_source``: quoting the installed Keras (``quote_source``, ``docstring_paragraph``).
- ``devices``: the GPU command (``python -m fastlstm_lib.topics.feeding``) and its committed results.
"""

from .dataset import (KINDS, Feeder, calibrate_loops_per_ms, make_batch, parse_feeder, python_work,
                      slow_batches_class, slow_dataset)
from .timeline import (Timeline, epoch_phases, epoch_seconds, finish_order, phase_seconds, plot_timeline,
                       production_ms, timeline_problems)
from .training import feed_and_train, small_model, train_in_a_loop, train_step_ms
from .gil import PYTHON_SWITCH_INTERVAL_S, gil_handoff_us, switch_interval, threads_take_turns
from .feeders import compare_feeders, enqueue_all, idle_check, speed_words, summarize_feeders, tf_data_pipeline
from .isolation import ISOLATED, IsolatedRunTimeout, run_isolated, run_script
from .batch_size import step_cost_line, training_throughput
from .small_calls import single_sample_callers, small_call_latency
from .threads import tf_thread_probe, thread_count, thread_names, time_matmuls
from .profiling import (format_profile, function_share, key_as_bytes, key_as_text, lookup_batches, lookup_table,
                        profile_call, top_functions)
from .spawn import call_in_spawned_process
from .keras_source import docstring_paragraph, quote_source
from .devices import committed_device_runs, measure_devices


# ``SlowBatches`` is defined on first use (it subclasses a Keras class): dataset.py's PEP 562 hook.
from .dataset import __getattr__  # noqa: E402,F401
