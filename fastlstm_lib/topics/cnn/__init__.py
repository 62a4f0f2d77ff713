"""channels_first vs channels_last CNN training (notebooks 20-21): ``import fastlstm_lib.topics.cnn as cnn``.

Importing this package imports NumPy and the core only; Keras, TensorFlow and matplotlib load inside the functions.
"""

from ...runtime.keras_backend import environment, device_label, import_keras
from .models import (ARTICLE_NAMES, DATA_FORMATS, FULL_SIZE, NUM_CLASSES, build, cnn10, copy_weights,
                     flatten_rows_to_channels_first, input_shape, keras_example_cnn, layer_table, max_output_difference,
                     model_data_format, model_label, to_layout, trainable_count, twin_models, wide_resnet)
from .images import DOWNLOAD_ENV, ImageData, find_cached_cifar10, load_images, synthetic_images
from .training import PRECISIONS, short_error, time_layouts
from .compare import (article_channels_first, article_channels_first_source, chart_percent, compare_layouts,
                      epoch_chart, faster, format_results, format_then_and_now, outcome, speedup_chart, verdict)
from .tf_settings import (enable_memory_growth, gpu_memory_mib, layout_op_census, layout_optimizer, memory_grab_demo,
                          mirrored_strategy, start_cpu_conv_probes)
from .measure import MEASURE_COMMAND, committed_layout_results, run_plan, variant_plan
