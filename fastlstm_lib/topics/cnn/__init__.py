"""channels_first vs channels_last CNN training (notebooks 20-21): ``import fastlstm_lib.topics.cnn as cnn``.

Modules in the order the notebooks use them: formats, models, equivalence, images, probes,
training, compare, report, tf_settings, measure (the GPU command). Importing this package imports
NumPy and the core only; Keras, TensorFlow and matplotlib load inside the functions.
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
