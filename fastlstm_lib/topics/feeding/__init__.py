"""Feeding data to Keras (notebooks 30-31): every public name of the modules; Keras loads on first use."""

from .dataset import (KINDS, Feeder, calibrate_loops_per_ms, make_batch, parse_feeder, python_work,
                      slow_batches_class, slow_dataset)
from .timeline import (Timeline, epoch_phases, epoch_seconds, finish_order, phase_seconds, plot_timeline,
                       production_ms, timeline_problems)
from .feeders import (compare_feeders, enqueue_all, feed_and_train, idle_check, small_model, speed_words,
                      summarize_feeders, tf_data_pipeline, train_in_a_loop, train_step_ms)
from .isolation import ISOLATED, IsolatedRunTimeout, call_in_spawned_process, run_isolated, run_script
from .threads import (PYTHON_SWITCH_INTERVAL_S, gil_handoff_us, switch_interval, tf_thread_probe, thread_count,
                      thread_names, threads_take_turns, time_matmuls)
from .profiling import (format_profile, function_share, key_as_bytes, key_as_text, lookup_batches, lookup_table,
                        profile_call, top_functions)
from .keras_source import docstring_paragraph, quote_source
from .devices import (committed_device_runs, measure_devices, single_sample_callers, small_call_latency, step_cost_line,
                      training_throughput)


# ``SlowBatches`` is defined on first use (it subclasses a Keras class): dataset.py's PEP 562 hook.
from .dataset import __getattr__  # noqa: E402,F401
