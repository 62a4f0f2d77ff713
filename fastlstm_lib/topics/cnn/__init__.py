"""channels_first vs channels_last CNN training (notebooks 20-21): ``import fastlstm_lib.topics.cnn as cnn``.

The modules, in the order the notebooks use them (each imports only the ones above it, and the
core: ``checks``, ``keras_backend``, ``timing``, ``progress``, ``results``):

- ``formats``: the two layouts, CIFAR-10's shape, ``to_layout`` (uint8 NHWC -> float32 in a layout).
- ``models``: ``cnn10`` (the article's 10-layer CNN, reconstructed), ``wide_resnet`` (WRN-28-10),
  ``keras_example_cnn`` (the classic Keras example, for the Flatten pitfall), ``model_label``.
- ``equivalence``: ``copy_weights``, ``twin_models``, ``max_output_difference``: both layouts
  compute the same function.
- ``images``: ``load_images``: CIFAR-10 from the Keras cache, else a labelled synthetic stand-in.
- ``probes``: what TensorFlow does with channels_first on a CPU (graph census, oneDNN probe).
- ``training``: ``time_layouts``: epoch times (the layouts in turns, on the same batches), test accuracy.
- ``compare``: the one definition of "% faster" (``faster``), ``compare_layouts``, ``verdict``.
- ``report``: tables and charts: the article's numbers beside measured rows, and epoch times.
- ``tf_settings``: TensorFlow's memory growth, MirroredStrategy, layout optimizer.
- ``measure``: the GPU measurement command (``python -m fastlstm_lib.topics.cnn``) and the results
  files under data/results/ (``committed_layout_results``).

Importing this package imports NumPy and the core only; Keras, TensorFlow and matplotlib load
inside the functions that need them.
"""

from ...runtime.keras_backend import environment, device_label, import_keras, strict_float32
from .formats import CIFAR_CHANNELS, CIFAR_IMAGE_SIZE, DATA_FORMATS, NUM_CLASSES, channel_axis, input_shape, to_layout
from .models import (ARTICLE_NAMES, BUILDERS, FULL_SIZE, build, cnn10, keras_example_cnn, layer_table, model_data_format,
                     model_label, trainable_count, wide_resnet)
from .equivalence import copy_weights, flatten_rows_to_channels_first, max_output_difference, predict, twin_models
from .images import DOWNLOAD_ENV, ImageData, find_cached_cifar10, load_images, synthetic_images
from .probes import layout_op_census, start_cpu_conv_probes
from .training import PRECISIONS, compile_for_training, precision_policy, short_error, time_layouts
from .compare import FASTER_DEFINITION, chart_percent, compare_layouts, faster, format_results, outcome, verdict
from .report import article_channels_first, article_channels_first_source, epoch_chart, format_then_and_now, speedup_chart
from .tf_settings import enable_memory_growth, gpu_memory_mib, layout_optimizer, memory_grab_demo, mirrored_strategy
from .measure import (MEASURE_COMMAND, committed_layout_results, run_plan, save_layout_results, variant_plan)
