"""channels_first vs channels_last: CNN builders, data, equivalence checks and timing (notebook 20).

The pieces:

- ``cifar_cnn`` and ``wide_resnet``: one builder per model, each taking ``data_format``. The
  channels_first model differs from the channels_last one only in the input shape, the
  ``data_format`` of every Conv2D and pooling layer, and ``BatchNormalization(axis=1)``.
- ``load_images``: CIFAR-10 when Keras has it cached (or the user opts in to downloading with
  ``FASTLSTM_DOWNLOAD=1``), otherwise a seeded, learnable synthetic stand-in of the same shape
  and dtype. The result says which one it is.
- ``to_layout``, ``copy_weights``, ``flatten_rows_to_channels_first``, ``max_output_difference``:
  the check that both layouts compute the same function.
- ``time_layouts`` (``time_training`` for one layout), ``compare_layouts``, ``verdict``: epoch
  times with the layouts taking turns (compile epoch apart), median and spread, images/s, and
  the channels_last / channels_first ratio, with the device and software versions in every result.
- ``layout_op_census``, ``cpu_conv_probe``: what TensorFlow does with channels_first on a CPU.
- ``enable_memory_growth``, ``mirrored_strategy``, ``layout_optimizer``: the TensorFlow GPU
  settings the article met (each one says why it did nothing where it can't apply).

``import fastlstm_lib`` stays light: Keras and TensorFlow are imported inside the functions.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import pickle
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .keras_bridge import import_keras

DATA_FORMATS = ("channels_last", "channels_first")
PRECISIONS = ("float32", "mixed_float16")
NUM_CLASSES = 10
#: CIFAR-10 as stored: 32x32 RGB, uint8, channels last.
CIFAR_IMAGE_SIZE = 32
CIFAR_CHANNELS = 3
#: Set to 1 to let ``load_images`` download CIFAR-10 (~170 MB) when it isn't cached.
DOWNLOAD_ENV = "FASTLSTM_DOWNLOAD"
#: Where Keras 3 keeps the downloaded archive, and where older Keras left the extracted batches.
CIFAR_ARCHIVE = "cifar-10-batches-py-target_archive"
CIFAR_ARCHIVE_BYTES = 170_498_071
CIFAR_FOLDERS = ("cifar-10-batches-py", os.path.join("cifar-10-batches-py-target", "cifar-10-batches-py"))

ARTICLE_CSV = Path(__file__).resolve().parents[1] / "data" / "article_channels_first.csv"


# --------------------------------------------------------------------------------------------
# Argument checks: say what was expected and what came.


def _check_data_format(data_format) -> str:
    if data_format not in DATA_FORMATS:
        raise ValueError(f"data_format must be one of {DATA_FORMATS}, got {data_format!r}")
    return data_format


def _check_int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _check_number(name: str, value) -> float:
    """A real number (Python or NumPy int/float, not bool): TypeError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    return float(value)


def _check_fraction(name: str, value, upper: float = 1.0, why: str = "") -> float:
    value = _check_number(name, value)
    if not 0.0 <= value < upper:  # False for NaN too
        raise ValueError(f"{name} must be in [0, {upper:g}){why}, got {value}")
    return value


def _check_timeout(name: str, value) -> float:
    value = _check_number(name, value)
    if not (value > 0 and np.isfinite(value)):
        raise ValueError(f"{name} must be a finite number of seconds > 0, got {value}")
    return value


def _check_model(name: str, model):
    """A Keras model (keras.Model, Sequential included): TypeError otherwise. Returns keras."""
    keras = import_keras()
    if not isinstance(model, keras.Model):
        raise TypeError(f"{name} must be a keras.Model (e.g. from cifar_cnn or wide_resnet), got {type(model).__name__}")
    return keras


def _check_precision(precision) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    return precision


def _check_images(name: str, images) -> np.ndarray:
    if not isinstance(images, np.ndarray):
        raise TypeError(f"{name} must be a NumPy array, got {type(images).__name__}")
    if images.ndim != 4 or images.shape[-1] != CIFAR_CHANNELS:
        raise ValueError(f"{name} must be channels_last images (N, H, W, 3), got shape {images.shape}")
    return images


# --------------------------------------------------------------------------------------------
# Models. Every layer has a fixed name, so that the two layouts can be matched layer by layer
# and printed outputs don't depend on how many models the session built before.


def input_shape(data_format: str, image_size: int, channels: int = CIFAR_CHANNELS) -> tuple[int, int, int]:
    """The shape of one image as the model sees it: (H, W, C) or (C, H, W)."""
    _check_data_format(data_format)
    _check_int("image_size", image_size)
    _check_int("channels", channels)
    if data_format == "channels_first":
        return (channels, image_size, image_size)
    return (image_size, image_size, channels)


def _bn_axis(data_format: str) -> int:
    # BatchNormalization normalizes each channel: axis 1 in NCHW, the last axis in NHWC.
    return 1 if data_format == "channels_first" else -1


def cifar_cnn(
    data_format: str = "channels_last",
    *,
    image_size: int = CIFAR_IMAGE_SIZE,
    width: int = 32,
    blocks: int = 2,
    dense_units: int = 512,
    dropout: float = 0.25,
    num_classes: int = NUM_CLASSES,
):
    """The classic Keras CIFAR-10 CNN: [conv-conv-pool] x blocks, flatten, dense, dense (softmax).

    With the defaults: conv32-conv32-pool-conv64-conv64-pool-dense512-dense10, ReLU, dropout
    after each pool and before the last layer. ``width`` sets the first block's filters (each
    block doubles them), ``blocks`` the depth. The output layer runs in float32 under mixed
    precision, so the softmax and the loss stay accurate.
    """
    keras = import_keras()
    _check_data_format(data_format)
    image_size = _check_int("image_size", image_size)
    width = _check_int("width", width)
    blocks = _check_int("blocks", blocks)
    dense_units = _check_int("dense_units", dense_units)
    # The dropout before the last layer is twice this one (the classic 0.25 / 0.5), and a
    # dropout rate must stay below 1.
    dropout = _check_fraction("dropout", dropout, upper=0.5, why=" (the last Dense layer gets 2 * dropout, which must stay below 1)")
    num_classes = _check_int("num_classes", num_classes, minimum=2)
    if image_size % 2**blocks:
        raise ValueError(f"image_size must be divisible by 2**blocks = {2**blocks} (one 2x2 pool per block), got {image_size}")
    layers = keras.layers
    inputs = keras.Input(shape=input_shape(data_format, image_size), name="images")
    x = inputs
    for block in range(1, blocks + 1):
        filters = width * 2 ** (block - 1)
        for conv in (1, 2):
            x = layers.Conv2D(filters, 3, padding="same", activation="relu", data_format=data_format, name=f"conv{block}_{conv}")(x)
        x = layers.MaxPooling2D(2, data_format=data_format, name=f"pool{block}")(x)
        x = layers.Dropout(dropout, name=f"dropout{block}")(x)
    # Flatten in memory order in both layouts: (h, w, c) for NHWC, (c, h, w) for NCHW, so the
    # Dense rows after it differ between the layouts (copy_weights permutes them). Said
    # explicitly: Flatten's default comes from ~/.keras/keras.json ("image_data_format"), and
    # Flatten(data_format="channels_first") would first transpose NCHW back to NHWC.
    x = layers.Flatten(data_format="channels_last", name="flatten")(x)
    x = layers.Dense(dense_units, activation="relu", name="dense")(x)
    x = layers.Dropout(2 * dropout, name="dropout_dense")(x)
    outputs = layers.Dense(num_classes, activation="softmax", dtype="float32", name="predictions")(x)
    return keras.Model(inputs, outputs, name=f"cifar_cnn_{data_format}")


def wide_resnet(
    data_format: str = "channels_last",
    *,
    depth: int = 28,
    width_factor: int = 10,
    dropout: float = 0.0,
    image_size: int = CIFAR_IMAGE_SIZE,
    num_classes: int = NUM_CLASSES,
):
    """WideResNet-depth-k (Zagoruyko & Komodakis 2016), pre-activation blocks.

    depth = 6n + 4: a 3x3 conv with 16 filters, then 3 groups of n blocks with 16k, 32k, 64k
    filters (strides 1, 2, 2), then BN-ReLU-global average pool-dense. A block is
    BN-ReLU-conv3x3-BN-ReLU-(dropout)-conv3x3 plus a shortcut: the identity, or a 1x1 conv
    when the width or the stride changes. WRN-28-10 has about 36.5M parameters.
    """
    keras = import_keras()
    _check_data_format(data_format)
    depth = _check_int("depth", depth, minimum=10)
    if (depth - 4) % 6:
        raise ValueError(f"depth must be 6n + 4 (10, 16, 22, 28, 40, ...), got {depth}")
    width_factor = _check_int("width_factor", width_factor)
    dropout = _check_fraction("dropout", dropout)
    image_size = _check_int("image_size", image_size)
    num_classes = _check_int("num_classes", num_classes, minimum=2)
    if image_size % 4:
        raise ValueError(f"image_size must be divisible by 4 (two stride-2 groups), got {image_size}")
    blocks_per_group = (depth - 4) // 6
    layers = keras.layers
    axis = _bn_axis(data_format)

    def conv(filters, size, stride, name):
        # No bias: every conv is followed by a BatchNormalization, whose offset does that job.
        return layers.Conv2D(filters, size, strides=stride, padding="same", use_bias=False, data_format=data_format, name=name)

    def bn_relu(x, name):
        x = layers.BatchNormalization(axis=axis, name=f"{name}_bn")(x)
        return layers.Activation("relu", name=f"{name}_relu")(x)

    def block(x, filters, stride, name):
        in_filters = x.shape[axis]
        pre = bn_relu(x, f"{name}_pre")
        y = conv(filters, 3, stride, f"{name}_conv1")(pre)
        y = bn_relu(y, f"{name}_mid")
        if dropout:
            y = layers.Dropout(dropout, name=f"{name}_dropout")(y)
        y = conv(filters, 3, 1, f"{name}_conv2")(y)
        if in_filters != filters or stride != 1:
            shortcut = conv(filters, 1, stride, f"{name}_shortcut")(pre)
        else:
            shortcut = x
        return layers.Add(name=f"{name}_add")([y, shortcut])

    inputs = keras.Input(shape=input_shape(data_format, image_size), name="images")
    x = conv(16, 3, 1, "stem_conv")(inputs)
    for group, (base, stride) in enumerate(zip((16, 32, 64), (1, 2, 2)), start=1):
        for index in range(blocks_per_group):
            x = block(x, base * width_factor, stride if index == 0 else 1, f"group{group}_block{index + 1}")
    x = bn_relu(x, "head")
    x = layers.GlobalAveragePooling2D(data_format=data_format, name="avgpool")(x)  # easy to forget
    outputs = layers.Dense(num_classes, activation="softmax", dtype="float32", name="predictions")(x)
    return keras.Model(inputs, outputs, name=f"wrn_{depth}_{width_factor}_{data_format}")


BUILDERS = {"cifar_cnn": cifar_cnn, "wide_resnet": wide_resnet}


def build(model: str, data_format: str, **options):
    """``build("cifar_cnn", "channels_first", width=8)``: one of BUILDERS by name."""
    if model not in BUILDERS:
        raise ValueError(f"model must be one of {sorted(BUILDERS)}, got {model!r}")
    return BUILDERS[model](data_format, **options)


def model_data_format(model) -> str:
    """The data_format of a model's convolutions (all of them must agree)."""
    keras = _check_model("model", model)
    formats = {layer.data_format for layer in model.layers if isinstance(layer, keras.layers.Conv2D)}
    if len(formats) != 1:
        raise ValueError(f"expected a model whose Conv2D layers share one data_format, found {sorted(formats) or 'no Conv2D'}")
    return formats.pop()


def layer_table(model) -> list[tuple[str, tuple, int]]:
    """(layer name, output shape without the batch, parameter count) for every layer."""
    _check_model("model", model)
    return [(layer.name, tuple(layer.output.shape[1:]), layer.count_params()) for layer in model.layers]


# --------------------------------------------------------------------------------------------
# The same function in both layouts.


def to_layout(images: np.ndarray, data_format: str) -> np.ndarray:
    """uint8 channels_last images -> float32 in [0, 1], in ``data_format`` (C-contiguous).

    channels_first is ``np.transpose(x, [0, 3, 1, 2])``; np.transpose only makes a view, so the
    array is copied to make NCHW the real order in memory.
    """
    _check_images("images", images)
    _check_data_format(data_format)
    x = images.astype(np.float32) / 255.0
    if data_format == "channels_first":
        x = np.ascontiguousarray(np.transpose(x, [0, 3, 1, 2]))
    return x


def flatten_rows_to_channels_first(kernel: np.ndarray, height: int, width: int, channels: int) -> np.ndarray:
    """Reorder the rows of a Dense kernel that follows Flatten, from NHWC order to NCHW order.

    Flatten of an (H, W, C) map puts feature (h, w, c) in row (h*W + w)*C + c; of a (C, H, W)
    map, in row (c*H + h)*W + w. Same features, other rows: to compute the same function the
    Dense kernel's rows must move with them.
    """
    if not isinstance(kernel, np.ndarray) or kernel.ndim != 2:
        raise TypeError(f"kernel must be a 2-D NumPy array (inputs, units), got {getattr(kernel, 'shape', type(kernel).__name__)}")
    for name, value in (("height", height), ("width", width), ("channels", channels)):
        _check_int(name, value)
    if kernel.shape[0] != height * width * channels:
        raise ValueError(f"kernel has {kernel.shape[0]} rows; expected height*width*channels = {height * width * channels}")
    units = kernel.shape[1]
    return kernel.reshape(height, width, channels, units).transpose(2, 0, 1, 3).reshape(-1, units)


def copy_weights(source, target) -> list[str]:
    """Copy a channels_last model's weights into the same model built channels_first.

    Conv kernels have the same shape (kh, kw, in, out) in Keras in both formats and BN vectors
    are per channel, so they copy unchanged; the Dense after a Flatten gets its rows permuted,
    unless the target's Flatten has ``data_format="channels_first"`` (it then transposes its
    NCHW input to NHWC itself, and the rows already match). Returns the names of the layers
    whose weights were permuted.
    """
    keras = _check_model("source", source)
    _check_model("target", target)
    if model_data_format(source) != "channels_last" or model_data_format(target) != "channels_first":
        raise ValueError("copy_weights(source, target) expects a channels_last source and a channels_first target")
    if [layer.name for layer in source.layers] != [layer.name for layer in target.layers]:
        raise ValueError("source and target must be the same architecture (same layer names in the same order)")
    permuted = []
    previous = None
    previous_target = None
    for src, dst in zip(source.layers, target.layers):
        weights = src.get_weights()
        if weights and isinstance(src, keras.layers.Dense) and isinstance(previous, keras.layers.Flatten):
            if previous.data_format != "channels_last" and len(previous.input.shape) > 2:
                raise ValueError(f"the source's {previous.name!r} layer has data_format={previous.data_format!r}: a "
                                 "channels_last model's Flatten must flatten in memory order (data_format='channels_last')")
            if getattr(previous_target, "data_format", "channels_last") == "channels_last":  # NCHW in memory order: (c, h, w)
                channels, height, width = previous_target.input.shape[1:]
                weights[0] = flatten_rows_to_channels_first(weights[0], height, width, channels)
                permuted.append(src.name)
        if weights:
            dst.set_weights(weights)
        previous, previous_target = src, dst
    return permuted


@contextlib.contextmanager
def strict_float32():
    """Switch TF32 off inside (TensorFlow and torch run float32 convolutions in TF32 on Ampere
    and newer GPUs by default: ~1e-3 relative error), so that comparisons mean float32."""
    backend = backend_name()
    if backend == "tensorflow":
        import tensorflow as tf

        previous = tf.config.experimental.tensor_float_32_execution_enabled()
        tf.config.experimental.enable_tensor_float_32_execution(False)
        try:
            yield
        finally:
            tf.config.experimental.enable_tensor_float_32_execution(previous)
    elif backend == "torch":
        import torch

        previous = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
        try:
            yield
        finally:
            torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = previous
    else:
        yield


def predict(model, images: np.ndarray, batch_size: int = 256) -> np.ndarray:
    """Class probabilities for uint8 channels_last images, in the model's own layout.

    Direct calls, not ``model.predict``: predict traces a new tf.function for every model, and
    TensorFlow warns about "retracing" when a session compares many models.
    """
    keras = import_keras()
    _check_int("batch_size", batch_size)
    x = to_layout(images, model_data_format(model))
    batches = [keras.ops.convert_to_numpy(model(x[i:i + batch_size], training=False)) for i in range(0, len(x), batch_size)]
    return np.concatenate(batches).astype(np.float32)


def max_output_difference(model_last, model_first, images: np.ndarray) -> float:
    """max |p_last - p_first| over the class probabilities of the same images (TF32 off)."""
    with strict_float32():
        return float(np.max(np.abs(predict(model_last, images) - predict(model_first, images))))


# --------------------------------------------------------------------------------------------
# Data: CIFAR-10 only if it's already here (or the user asked for the download), else a
# learnable synthetic stand-in of the same shape and dtype.


@dataclass(frozen=True)
class ImageData:
    x_train: np.ndarray  # uint8 (N, H, W, 3), channels_last as stored
    y_train: np.ndarray  # int32 (N,)
    x_test: np.ndarray
    y_test: np.ndarray
    source: str  # "cifar10" or "synthetic"
    description: str

    @property
    def real(self) -> bool:
        return self.source == "cifar10"

    @property
    def image_size(self) -> int:
        return int(self.x_train.shape[1])

    def __repr__(self) -> str:
        return (f"ImageData({self.source}: train {self.x_train.shape} {self.x_train.dtype}, "
                f"test {self.x_test.shape}, {NUM_CLASSES} classes)")


def keras_cache_dirs() -> list[Path]:
    """Where Keras keeps datasets: $KERAS_HOME/datasets or ~/.keras/datasets (/tmp/.keras if ~ is read-only)."""
    if "KERAS_HOME" in os.environ:
        homes = [Path(os.environ["KERAS_HOME"])]
    else:
        homes = [Path.home() / ".keras", Path("/tmp/.keras")]
    return [home / "datasets" for home in homes]


def _home_relative(path: Path) -> str:
    """A path as a reader recognises it on any machine: ~/.keras/datasets, not /root/.keras/..."""
    try:
        return str(Path("~") / Path(path).relative_to(Path.home()))
    except ValueError:
        return str(path)


def find_cached_cifar10(cache_dir=None) -> tuple[str, Path] | None:
    """("archive", path) if Keras 3 has the downloaded archive, ("folder", path) if the extracted
    batches are there (older Keras), None if neither: then loading it would need the network."""
    dirs = [Path(cache_dir)] if cache_dir is not None else keras_cache_dirs()
    for directory in dirs:
        archive = directory / CIFAR_ARCHIVE
        # Keras re-downloads an archive whose hash is wrong: only a complete one counts.
        if archive.is_file() and archive.stat().st_size == CIFAR_ARCHIVE_BYTES:
            return "archive", archive
        for folder in CIFAR_FOLDERS:
            path = directory / folder
            if all((path / name).is_file() for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]):
                return "folder", path
    return None


def _read_cifar_folder(path: Path):
    """The extracted python-pickle batches, read the way keras.datasets.cifar10 reads them."""

    def batch(name):
        with open(path / name, "rb") as f:
            entry = pickle.load(f, encoding="bytes")
        images = np.asarray(entry[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return images, np.asarray(entry[b"labels"], dtype=np.int32)

    train = [batch(f"data_batch_{i}") for i in range(1, 6)]
    x_test, y_test = batch("test_batch")
    return np.concatenate([t[0] for t in train]), np.concatenate([t[1] for t in train]), x_test, y_test


def _load_cifar10(found):
    if found is not None and found[0] == "folder":
        return _read_cifar_folder(found[1])
    keras = import_keras()
    (x_train, y_train), (x_test, y_test) = keras.datasets.cifar10.load_data()
    if x_train.shape[-1] != CIFAR_CHANNELS:  # keras.json may say channels_first
        x_train, x_test = x_train.transpose(0, 2, 3, 1), x_test.transpose(0, 2, 3, 1)
    return x_train, y_train.reshape(-1).astype(np.int32), x_test, y_test.reshape(-1).astype(np.int32)


def _class_templates(image_size: int) -> np.ndarray:
    """Ten fixed colour patterns (float, ~[-1, 1]): a stripe orientation, frequency and colour per class."""
    rng = np.random.default_rng(20)  # fixed: the classes are the same for every seed and split
    grid = np.arange(image_size) / image_size
    yy, xx = np.meshgrid(grid, grid, indexing="ij")
    templates = np.empty((NUM_CLASSES, image_size, image_size, CIFAR_CHANNELS))
    for label in range(NUM_CLASSES):
        angle = np.pi * label / NUM_CLASSES
        frequency = 2 + label % 3
        phase = rng.uniform(0, 2 * np.pi)
        stripes = np.sin(2 * np.pi * frequency * (np.cos(angle) * xx + np.sin(angle) * yy) + phase)
        colour = rng.uniform(-1, 1, CIFAR_CHANNELS)
        templates[label] = stripes[..., None] * (0.5 + 0.5 * np.abs(colour)) * np.sign(colour)
    return templates


def synthetic_images(n: int, *, image_size: int = CIFAR_IMAGE_SIZE, seed: int = 0, noise: float = 0.5):
    """A learnable 10-class stand-in for CIFAR-10: (uint8 (n, size, size, 3), int32 (n,)).

    Each image is its class's stripe pattern, shifted by up to 1/4 of the image, scaled in
    contrast, plus Gaussian noise (``noise`` times the pattern's amplitude). The notebook's small
    CNN learns it to 97-100% test accuracy in 6 epochs of 2,048 16x16 images; a linear classifier
    on the pixels gets ~28%. Not CIFAR-10: accuracy on it says nothing about real images.
    """
    n = _check_int("n", n)
    image_size = _check_int("image_size", image_size, minimum=4)
    _check_int("seed", seed, minimum=0)
    noise = _check_number("noise", noise)
    if not (noise >= 0 and np.isfinite(noise)):
        raise ValueError(f"noise must be a finite number >= 0, got {noise!r}")
    rng = np.random.default_rng(seed)
    templates = _class_templates(image_size).astype(np.float32)
    labels = rng.integers(0, NUM_CLASSES, n).astype(np.int32)
    shifts = rng.integers(-image_size // 4, image_size // 4 + 1, (n, 2))
    contrast = rng.uniform(0.5, 1.0, n).astype(np.float32)
    images = np.empty((n, image_size, image_size, CIFAR_CHANNELS), dtype=np.uint8)
    chunk = 4096  # float32 work arrays of at most 4096 images: 50,000 CIFAR-sized images stay cheap
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        block = np.stack([np.roll(templates[labels[i]], tuple(shifts[i]), axis=(0, 1)) for i in range(start, stop)])
        block = block * contrast[start:stop, None, None, None]
        block += noise * rng.standard_normal(block.shape, dtype=np.float32)
        images[start:stop] = np.clip(127.5 + 100.0 * block, 0, 255).astype(np.uint8)
    return images, labels


def _downsample(images: np.ndarray, image_size: int) -> np.ndarray:
    factor = images.shape[1] // image_size
    n, h, w, c = images.shape
    blocks = images.reshape(n, h // factor, factor, w // factor, factor, c).astype(np.float32)
    return np.round(blocks.mean(axis=(2, 4))).astype(np.uint8)


def load_images(
    n_train: int | None = None,
    n_test: int | None = None,
    *,
    image_size: int = CIFAR_IMAGE_SIZE,
    download: bool | None = None,
    cache_dir=None,
    seed: int = 0,
) -> ImageData:
    """CIFAR-10 if it's cached or ``download`` (default: $FASTLSTM_DOWNLOAD == "1"), else synthetic.

    The first ``n_train`` / ``n_test`` images (all of CIFAR-10 when None; the synthetic set then
    has 50,000 / 10,000). ``image_size`` 32, 16 or 8 (2x2 block averages for the smaller ones).
    Never touches the network unless ``download`` is true; if that download fails, falls back to
    the synthetic set and says why in ``description``.
    """
    if n_train is not None:
        _check_int("n_train", n_train)
    if n_test is not None:
        _check_int("n_test", n_test)
    image_size = _check_int("image_size", image_size)
    if CIFAR_IMAGE_SIZE % image_size:
        raise ValueError(f"image_size must divide {CIFAR_IMAGE_SIZE} (32, 16, 8, ...), got {image_size}")
    if download is None:
        download = os.environ.get(DOWNLOAD_ENV, "") == "1"
    if not isinstance(download, bool):
        raise TypeError(f"download must be True, False or None, got {download!r}")
    found = find_cached_cifar10(cache_dir)
    looked = [Path(cache_dir)] if cache_dir else keras_cache_dirs()
    note = "" if found else f"CIFAR-10 is not in the Keras cache ({', '.join(_home_relative(d) for d in looked)})"
    if found or download:
        try:
            x_train, y_train, x_test, y_test = _load_cifar10(found)
            x_train, y_train = x_train[:n_train], y_train[:n_train]
            x_test, y_test = x_test[:n_test], y_test[:n_test]
            if image_size != CIFAR_IMAGE_SIZE:
                x_train, x_test = _downsample(x_train, image_size), _downsample(x_test, image_size)
            where = f"cached at {found[1]}" if found else "downloaded"
            return ImageData(x_train, y_train, x_test, y_test, "cifar10",
                             f"CIFAR-10 ({where}), {len(x_train)} train / {len(x_test)} test images, {image_size}x{image_size}")
        except Exception as error:  # a failed download must not stop the course: say it, go on offline
            note = f"CIFAR-10 download failed ({type(error).__name__}: {str(error)[:120]})"
    elif not note:
        note = "CIFAR-10 not requested"
    x_train, y_train = synthetic_images(n_train or 50_000, image_size=image_size, seed=seed)
    x_test, y_test = synthetic_images(n_test or 10_000, image_size=image_size, seed=seed + 1)
    hint = f"; set {DOWNLOAD_ENV}=1 to download it" if not download else ""
    return ImageData(x_train, y_train, x_test, y_test, "synthetic",
                     f"OFFLINE SUBSTITUTE: seeded synthetic 10-class stripe images (not CIFAR-10), "
                     f"{len(x_train)} train / {len(x_test)} test, {image_size}x{image_size}, uint8. {note}{hint}.")


# --------------------------------------------------------------------------------------------
# Where we run: the device and versions that go with every result.


def backend_name() -> str:
    return import_keras().backend.backend()


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_names() -> list[str]:
    """Names of the GPUs the Keras backend can use ([] on a CPU)."""
    backend = backend_name()
    if backend == "tensorflow":
        import tensorflow as tf

        names = []
        for gpu in tf.config.list_physical_devices("GPU"):
            details = tf.config.experimental.get_device_details(gpu)
            names.append(details.get("device_name", gpu.name))
        return names
    if backend == "torch":
        import torch

        return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    if backend == "jax":
        import jax

        return [d.device_kind for d in jax.devices() if d.platform == "gpu"]
    return []


def environment() -> dict:
    """Device and software versions, recorded with every measurement."""
    keras = import_keras()
    backend = keras.backend.backend()
    gpus = gpu_names()
    info = {
        "device": gpus[0] if gpus else f"CPU: {_cpu_name()} ({os.cpu_count()} logical cores)",
        "gpus": len(gpus),
        "backend": backend,
        "keras": keras.__version__,
        "python": platform.python_version(),
    }
    if backend == "tensorflow":
        import tensorflow as tf

        build = tf.sysconfig.get_build_info()
        info["tensorflow"] = tf.__version__
        info["cuda"] = build.get("cuda_version") if gpus else None
        info["cudnn"] = build.get("cudnn_version") if gpus else None
        # On Ampere and newer GPUs TF runs float32 convolutions in TF32 on the Tensor Cores.
        info["tf32"] = bool(tf.config.experimental.tensor_float_32_execution_enabled()) if gpus else None
        info["onednn"] = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default (on for x86 Linux)")
    elif backend == "torch":
        import torch

        info["torch"] = torch.__version__
        info["cuda"] = torch.version.cuda if gpus else None
        info["cudnn"] = torch.backends.cudnn.version() if gpus else None
    return info


def device_label(env: dict) -> str:
    """'NVIDIA H100 · tensorflow 2.21.0 · Keras 3.15.1': a short label for tables and charts."""
    framework = env.get("tensorflow") or env.get("torch") or ""
    return f"{env['device']} · {env['backend']} {framework} · Keras {env['keras']}".replace("  ", " ")


# --------------------------------------------------------------------------------------------
# Timing.


@contextlib.contextmanager
def precision_policy(precision: str):
    """Keras' global dtype policy for the models built inside, restored afterwards."""
    keras = import_keras()
    _check_precision(precision)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(precision)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def _epoch_timer():
    keras = import_keras()

    class EpochTimer(keras.callbacks.Callback):
        """Wall time of every epoch; on_epoch_end comes after the last step has finished."""

        def __init__(self):
            super().__init__()
            self.seconds = []

        def on_epoch_begin(self, epoch, logs=None):
            self._start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            self.seconds.append(time.perf_counter() - self._start)

    return EpochTimer()


def compile_for_training(model, *, jit_compile: bool = False, learning_rate: float = 1e-3):
    """Adam, sparse categorical cross-entropy, accuracy: the same for every layout and variant."""
    keras = import_keras()
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=learning_rate),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
        jit_compile=jit_compile,
    )
    return model


def time_layouts(
    model: str,
    data: ImageData,
    *,
    data_formats: tuple[str, ...] = DATA_FORMATS,
    precision: str = "float32",
    jit_compile: bool = False,
    batch_size: int = 128,
    rounds: int = 5,
    seed: int = 0,
    strategy=None,
    variant: str = "",
    on_error: str = "raise",
    env: dict | None = None,
    **model_options,
) -> list[dict]:
    """Train ``model`` ("cifar_cnn" or "wide_resnet") on ``data.x_train`` in each layout, one epoch
    at a time, the layouts taking turns.

    Each layout first gets one epoch that traces and compiles the training step (XLA too, with
    ``jit_compile``): reported apart as ``first_epoch_s``. Then ``rounds`` rounds of one epoch
    per layout, alternating which goes first: a machine that gets busier or quieter meanwhile
    (other processes, clocks, heat) then slows both layouts alike, and round i of one layout can
    be compared with round i of the other. ``epoch_s``: each round's time; median, min, max and
    images/s at the median. ``strategy``: a tf.distribute strategy to build and train under
    (``batch_size`` is then the global batch). ``variant``: a label for anything else that
    differs (e.g. "layout optimizer off"). ``on_error="record"``: a layout the backend can't
    train gets ``error`` (the short reason) instead of raising. Returns one JSON-able dict per
    layout, each naming the device and the software versions.
    """
    keras = import_keras()
    if not isinstance(data_formats, (tuple, list)) or not data_formats:
        raise TypeError(f"data_formats must be a non-empty tuple of {DATA_FORMATS}, got {data_formats!r}")
    for data_format in data_formats:
        _check_data_format(data_format)
    if len(set(data_formats)) != len(data_formats):
        raise ValueError(f"data_formats must not repeat a layout (each is one model, timed in turns), got {tuple(data_formats)}")
    _check_precision(precision)
    if model not in BUILDERS:
        raise ValueError(f"model must be one of {sorted(BUILDERS)}, got {model!r}")
    if not isinstance(data, ImageData):
        raise TypeError(f"data must be an ImageData (from load_images), got {type(data).__name__}")
    if not isinstance(jit_compile, bool):
        raise TypeError(f"jit_compile must be True or False, got {jit_compile!r}")
    if on_error not in ("raise", "record"):
        raise ValueError(f"on_error must be 'raise' or 'record', got {on_error!r}")
    batch_size = _check_int("batch_size", batch_size)
    rounds = _check_int("rounds", rounds)
    env = env or environment()
    runs = {}
    for data_format in data_formats:
        keras.utils.set_random_seed(seed)
        scope = strategy.scope() if strategy is not None else contextlib.nullcontext()
        with precision_policy(precision), scope:
            net = build(model, data_format, image_size=data.image_size, **model_options)
            compile_for_training(net, jit_compile=jit_compile)
        result = {
            "model": model, "name": net.name.replace(f"_{data_format}", ""), "variant": variant,
            "data_format": data_format, "precision": precision, "jit_compile": jit_compile,
            "batch_size": batch_size, "replicas": strategy.num_replicas_in_sync if strategy is not None else 1,
            "images": len(data.x_train), "image_size": data.image_size, "data": data.source,
            "params": int(net.count_params()), "env": env, "error": None,
        }
        runs[data_format] = {"net": net, "x": to_layout(data.x_train, data_format), "timer": _epoch_timer(), "result": result}
    for turn in range(1 + rounds):
        order = list(data_formats) if turn % 2 == 0 else list(reversed(data_formats))
        for data_format in order:
            run = runs[data_format]
            if run["result"]["error"]:
                continue
            try:
                run["net"].fit(run["x"], data.y_train, batch_size=batch_size, epochs=1, verbose=0, shuffle=True,
                               callbacks=[run["timer"]])
            except Exception as error:  # TF raises InvalidArgumentError / UnimplementedError for a layout it can't run
                if on_error == "raise":
                    raise
                run["result"]["error"] = short_error(error)
    results = []
    for data_format in data_formats:
        run = runs[data_format]
        result = run["result"]
        if not result["error"]:
            first, *timed = run["timer"].seconds
            median = statistics.median(timed)
            result.update(first_epoch_s=first, epoch_s=timed, median_s=median, min_s=min(timed), max_s=max(timed),
                          images_per_s=len(data.x_train) / median)
        results.append(result)
    return results


def time_training(model: str, data: ImageData, *, data_format: str, **options) -> dict:
    """``time_layouts`` for one layout: a single result dict."""
    return time_layouts(model, data, data_formats=(_check_data_format(data_format),), **options)[0]


def short_error(error: BaseException) -> str:
    """The line of a TensorFlow error that says what went wrong (not the traceback of the graph)."""
    skip = ("Graph execution error", "Detected at node", "File ", "[[", "{{")
    lines = [line.strip() for line in str(error).splitlines()]
    useful = [line for line in lines if line and not line.startswith(skip)]
    message = useful[-1] if useful else type(error).__name__
    return message.split(" [Op:")[0].split("}} ")[-1]


def twin_models(model: str, *, seed: int = 0, **options):
    """The same model in both layouts with the same weights: (channels_last, channels_first)."""
    keras = import_keras()
    keras.utils.set_random_seed(seed)
    last = build(model, "channels_last", **options)
    first = build(model, "channels_first", **options)
    copy_weights(last, first)
    return last, first


def train_and_evaluate(net, data: ImageData, *, epochs: int = 3, batch_size: int = 128, seed: int = 0) -> dict:
    """Train ``net`` on data.x_train (in its own layout), return test accuracy and loss."""
    keras = _check_model("net", net)
    if not isinstance(data, ImageData):
        raise TypeError(f"data must be an ImageData (from load_images), got {type(data).__name__}")
    epochs = _check_int("epochs", epochs)
    batch_size = _check_int("batch_size", batch_size)
    data_format = model_data_format(net)
    keras.utils.set_random_seed(seed)  # the same shuffles for both layouts
    compile_for_training(net)
    net.fit(to_layout(data.x_train, data_format), data.y_train, batch_size=batch_size, epochs=epochs, verbose=0, shuffle=True)
    loss, accuracy = net.evaluate(to_layout(data.x_test, data_format), data.y_test, batch_size=256, verbose=0)
    return {"data_format": data_format, "accuracy": float(accuracy), "loss": float(loss), "epochs": epochs, "data": data.source}


def variant_key(result: dict) -> tuple:
    """What must match for two results to be compared: everything but the layout."""
    return (result["name"], result["precision"], result["jit_compile"], result["batch_size"],
            result["replicas"], result["images"], result["image_size"], result.get("variant", ""))


def compare_layouts(results: list[dict]) -> list[dict]:
    """Pair channels_last and channels_first results of the same variant.

    ratio = median epoch time channels_last / channels_first: above 1, channels_first is faster.
    ``clear``: the faster layout was faster in every round (round i of one layout against round i
    of the other, as ``time_layouts`` runs them side by side); otherwise the difference is within
    the noise of this machine.
    """
    if not isinstance(results, (list, tuple)):
        raise TypeError(f"results must be a list of time_layouts / time_training results (dicts), got {type(results).__name__}")
    needed = ("name", "precision", "jit_compile", "batch_size", "replicas", "images", "image_size", "data_format", "env")
    for index, result in enumerate(results):
        if not isinstance(result, dict):
            raise TypeError(f"results[{index}] must be a dict from time_layouts, got {type(result).__name__}")
        missing = [key for key in needed if key not in result]
        if missing:
            raise ValueError(f"results[{index}] lacks {missing}: expected a dict from time_layouts / time_training")
        _check_data_format(result["data_format"])
        if not result.get("error") and not {"median_s", "epoch_s"} <= set(result):
            raise ValueError(f"results[{index}] has neither an error nor its times (median_s, epoch_s)")
    by_key: dict[tuple, dict] = {}
    for result in results:
        by_key.setdefault(variant_key(result), {})[result["data_format"]] = result
    rows = []
    for key, pair in by_key.items():
        if set(pair) != set(DATA_FORMATS):
            continue
        last, first = pair["channels_last"], pair["channels_first"]
        common = {"model": key[0], "precision": key[1], "jit_compile": key[2], "batch_size": key[3],
                  "replicas": key[4], "variant": key[7], "device": device_label(last["env"]),
                  "images": key[5], "image_size": key[6], "data": last.get("data")}
        failed = [result for result in (last, first) if result.get("error")]
        if failed:
            works = [f for f in DATA_FORMATS if not pair[f].get("error")]
            rows.append(dict(common, last_s=last.get("median_s"), first_s=first.get("median_s"), ratio=None,
                             winner=works[0] if len(works) == 1 else None, clear=len(works) == 1,
                             error="; ".join(f"{r['data_format']}: {r['error']}" for r in failed)))
            continue
        faster, slower = (first, last) if first["median_s"] < last["median_s"] else (last, first)
        rounds = list(zip(faster["epoch_s"], slower["epoch_s"]))
        rows.append(dict(common, last_s=last["median_s"], first_s=first["median_s"],
                         ratio=last["median_s"] / first["median_s"], winner=faster["data_format"],
                         clear=all(fast < slow for fast, slow in rounds), rounds=len(rounds), error=None))
    return rows


def verdict(row: dict) -> str:
    """One sentence for one compare_layouts row."""
    what = f"{row['model']}, {row['precision']}, XLA {'on' if row['jit_compile'] else 'off'}"
    if row["variant"]:
        what += f", {row['variant']}"
    if row["replicas"] > 1:
        what += f", {row['replicas']} GPUs"
    return f"{what}: {_outcome(row)}"


def _outcome(row: dict) -> str:
    if row.get("error"):
        if row["winner"]:
            return f"only {row['winner']} runs ({row['error']})"
        return f"neither layout runs ({row['error']})"
    if not row["clear"]:
        return f"no clear winner (ratio {row['ratio']:.2f}; neither layout won all {row['rounds']} rounds)"
    percent = abs(row["ratio"] - 1) * 100 if row["winner"] == "channels_first" else abs(1 / row["ratio"] - 1) * 100
    return f"{row['winner']} is {percent:.0f}% faster (ratio {row['ratio']:.2f})"


#: Which of our builders each of the article's models is (by the name time_layouts gives a result).
_ARTICLE_MODELS = {"10-layer CNN": ("cifar_cnn",), "WRN-28-10": ("wrn_",), "10-layer CNN and WRN-28-10": ("cifar_cnn", "wrn_")}


def format_then_and_now(rows: list[dict]) -> str:
    """The article's numbers and this run's ``compare_layouts`` rows side by side, as text.

    For each of the article's experiments (float32, no XLA, 1 or 2 GPUs), the rows of this run
    with the same model family, precision and number of devices (XLA off, no variant), each
    labelled with its device, backend and Keras versions, model size, images and batch. Then
    this run's other variants, which the article has no counterpart for."""
    if not isinstance(rows, (list, tuple)) or not all(isinstance(row, dict) for row in rows):
        raise TypeError(f"rows must be a list of compare_layouts rows (dicts), got {type(rows).__name__}")
    needed = ("model", "precision", "jit_compile", "batch_size", "replicas", "variant", "device", "winner", "clear")
    for index, row in enumerate(rows):
        missing = [key for key in needed if key not in row]
        if missing:
            raise ValueError(f"rows[{index}] lacks {missing}: expected a row from compare_layouts")

    def measured(row):
        size = f", {row['image_size']}x{row['image_size']}" if row.get("image_size") else ""
        data = f" {row['data']}" if row.get("data") else ""
        images = f", {row['images']:,}{data} images" if row.get("images") else ""
        devices = f", {row['replicas']} GPUs" if row["replicas"] > 1 else ""
        return (f"this run  [{row['device']} · {row['model']} · {row['precision']} · XLA {'on' if row['jit_compile'] else 'off'}"
                f"{devices} · batch {row['batch_size']}{size}{images}]: {_outcome(row)}")

    lines, matched = [], set()
    for article in article_channels_first():
        lines.append(f"{article['model']}, {article['gpus']} GPU{'s' if article['gpus'] > 1 else ''}, {article['precision']}, no XLA")
        lines.append(f"  article   [RTX 2080 Ti · TF 1.13 · CUDA 10.0 · cuDNN 7.5 · CIFAR-10 32x32]: channels_first "
                     f"{article['qualifier']} {article['cf_faster_pct']:.0f}% faster (the article's words, not a measured time)")
        ours = [index for index, row in enumerate(rows)
                if row["model"].startswith(_ARTICLE_MODELS.get(article["model"], ("?",))) and row["precision"] == article["precision"]
                and not row["jit_compile"] and not row["variant"] and row["replicas"] == article["gpus"]]
        for index in ours:
            lines.append("  " + measured(rows[index]))
            matched.add(index)
        if not ours:
            lines.append("  this run  not measured" + (f" (needs {article['gpus']} GPUs)" if article["gpus"] > 1 else ""))
    others = [row for index, row in enumerate(rows) if index not in matched]
    if others:
        lines.append("Measured here only (no counterpart in the article):")
        lines += ["  " + measured(row) for row in others]
    return "\n".join(lines)


def format_results(results: list[dict]) -> str:
    """A text table of time_layouts / time_training results."""
    lines = [f"{'model':<12} {'layout':<15} {'precision':<14} {'XLA':<4} {'batch':>5} {'compile ep s':>12} "
             f"{'median s':>9} {'min-max s':>15} {'images/s':>9}"]
    for r in results:
        name = r["name"] + (f" [{r['variant']}]" if r.get("variant") else "")
        if r.get("error"):
            lines.append(f"{name:<12} {r['data_format']:<15} {r['precision']:<14} {'on' if r['jit_compile'] else 'off':<4} "
                         f"{r['batch_size']:>5}  FAILS: {r['error']}")
            continue
        lines.append(
            f"{name:<12} {r['data_format']:<15} {r['precision']:<14} {'on' if r['jit_compile'] else 'off':<4} "
            f"{r['batch_size']:>5} {r['first_epoch_s']:>12.2f} {r['median_s']:>9.3f} "
            f"{r['min_s']:>7.3f}-{r['max_s']:<7.3f} {r['images_per_s']:>9.0f}"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# What TensorFlow does with channels_first.


def layout_op_census(model) -> dict[str, int]:
    """Count the layout-relevant ops in the TensorFlow graph of one forward pass.

    Keys like 'Conv2D NCHW', 'MaxPool NHWC', 'Transpose'. This is the graph Keras builds, before
    TensorFlow's own optimizers (Grappler's layout optimizer, oneDNN, XLA) rewrite it.
    """
    keras = import_keras()
    if keras.backend.backend() != "tensorflow":
        raise RuntimeError(f"layout_op_census needs the TensorFlow backend; Keras runs on {keras.backend.backend()}")
    import tensorflow as tf

    spec = tf.TensorSpec((None,) + tuple(model.input.shape[1:]), tf.float32)
    graph = tf.function(lambda x: model(x, training=False)).get_concrete_function(spec).graph
    counts: dict[str, int] = {}
    for op in graph.get_operations():
        if op.type in ("Conv2D", "MaxPool", "AvgPool", "FusedBatchNormV3"):
            key = f"{op.type} {op.get_attr('data_format').decode()}"
        elif op.type == "Transpose":
            key = "Transpose"
        else:
            continue
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


_PROBE = r"""
import json, os, sys
import numpy as np
import tensorflow as tf
result = {}
for fmt in ("NHWC", "NCHW"):
    x = np.random.default_rng(0).random((4, 8, 8, 8), dtype=np.float32)  # N=4 and H = W = C = 8: valid in both formats
    k = np.random.default_rng(1).random((3, 3, 8, 8), dtype=np.float32)
    sys.stdout.write("PROBE-BEGIN " + fmt + "\n"); sys.stdout.flush()
    try:
        y = tf.nn.conv2d(x, k, 1, "SAME", data_format=fmt).numpy()
        result[fmt] = {"ok": True, "error": None}
    except Exception as error:
        result[fmt] = {"ok": False, "error": type(error).__name__ + ": " + str(error).split(" [Op:")[0].split("}}")[-1].strip()}
    sys.stdout.write("PROBE-END " + fmt + "\n"); sys.stdout.flush()
print("PROBE-RESULT " + json.dumps(result))
"""


def cpu_conv_probe(*, onednn: bool = True, timeout: float = 180.0) -> dict:
    """Run one Conv2D in NHWC and one in NCHW on the CPU, in a child Python process.

    The child hides every GPU, switches TensorFlow's oneDNN kernels on or off
    (TF_ENABLE_ONEDNN_OPTS) and asks oneDNN to log each primitive it runs (ONEDNN_VERBOSE=1).
    Returns {"NHWC": {...}, "NCHW": {...}}: ok, error (the message when it failed) and
    primitives (oneDNN's implementation name and memory formats for each primitive it ran).
    """
    if not isinstance(onednn, bool):
        raise TypeError(f"onednn must be True or False, got {onednn!r}")
    timeout = _check_timeout("timeout", timeout)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="-1", TF_ENABLE_ONEDNN_OPTS="1" if onednn else "0",
               ONEDNN_VERBOSE="1", TF_CPP_MIN_LOG_LEVEL="2")
    completed = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=timeout)
    result, current, primitives = None, None, {"NHWC": [], "NCHW": []}
    for line in completed.stdout.splitlines():
        if line.startswith("PROBE-BEGIN "):
            current = line.split()[1]
        elif line.startswith("PROBE-END "):
            current = None
        elif line.startswith("PROBE-RESULT "):
            result = json.loads(line[len("PROBE-RESULT "):])
        elif current and line.startswith("onednn_verbose,") and ",primitive,exec," in line:
            fields = line.split(",")
            # onednn_verbose,v1,primitive,exec,cpu,<kind>,<implementation>,<prop>,<memory descriptors>,...
            primitives[current].append({"kind": fields[5], "implementation": fields[6], "memory": fields[8]})
    if result is None:
        raise RuntimeError(f"the probe process failed (exit {completed.returncode}): {completed.stderr[-500:]}")
    for fmt in result:
        result[fmt]["primitives"] = primitives[fmt]
    return result


# --------------------------------------------------------------------------------------------
# GPU settings of TensorFlow: memory growth, several GPUs, the layout optimizer.


def enable_memory_growth() -> str:
    """Let TensorFlow take GPU memory as it needs it, instead of nearly all of it at start.

    Must run before anything touches a GPU (before ``import_keras``, which lists the devices).
    Returns what it did, or why it did nothing.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras

    backend = keras.backend.backend()
    if backend != "tensorflow":
        return f"skipped: Keras runs on {backend}; memory growth is a TensorFlow setting (torch's caching allocator grows on demand anyway)"
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return "skipped: TensorFlow sees no GPU; on the CPU memory is allocated as needed anyway"
    try:
        for gpu in gpus:
            tf.config.experimental.set_memory_growth(gpu, True)
    except RuntimeError as error:
        return f"too late: {error} (call enable_memory_growth() first thing in a fresh process)"
    return f"memory growth on for {len(gpus)} GPU(s): TensorFlow now allocates GPU memory as it needs it"


def gpu_memory_mib() -> dict | None:
    """TensorFlow's current and peak GPU memory use on GPU:0 (MiB), None without a TF GPU."""
    keras = import_keras()
    if keras.backend.backend() != "tensorflow":
        return None
    import tensorflow as tf

    if not tf.config.list_physical_devices("GPU"):
        return None
    info = tf.config.experimental.get_memory_info("GPU:0")
    return {"current": info["current"] / 2**20, "peak": info["peak"] / 2**20}


_GRAB = r"""
import os, subprocess, sys
import tensorflow as tf
if sys.argv[1] == "growth":
    for gpu in tf.config.list_physical_devices("GPU"):
        tf.config.experimental.set_memory_growth(gpu, True)
(tf.ones((1024, 1024)) * 2.0).numpy()  # a 4 MiB tensor
out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                     capture_output=True, text=True).stdout
mine = [line.split(",")[1].strip() for line in out.splitlines() if line.split(",")[0].strip() == str(os.getpid())]
print("GRAB", mine[0] if mine else "unknown")
"""


def memory_grab_demo(timeout: float = 180.0) -> dict | str:
    """GPU memory (MiB, from nvidia-smi) held by a process that made one 4 MiB tensor, with memory
    growth off and on. A string saying why when it can't run (no TF GPU, no nvidia-smi)."""
    timeout = _check_timeout("timeout", timeout)
    keras = import_keras()
    if keras.backend.backend() != "tensorflow":
        return f"skipped: Keras runs on {keras.backend.backend()}, memory growth is a TensorFlow setting"
    import shutil

    import tensorflow as tf

    if not tf.config.list_physical_devices("GPU"):
        return "skipped: no GPU visible to TensorFlow"
    if shutil.which("nvidia-smi") is None:
        return "skipped: nvidia-smi not found, so the memory a process holds can't be read"
    used = {}
    for mode in ("default", "growth"):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
        out = subprocess.run([sys.executable, "-c", _GRAB, mode], env=env, capture_output=True, text=True, timeout=timeout).stdout
        value = next((line.split()[1] for line in out.splitlines() if line.startswith("GRAB ")), "unknown")
        used[mode] = float(value) if value.replace(".", "").isdigit() else None
    return used


def mirrored_strategy():
    """(tf.distribute.MirroredStrategy over all GPUs, None) or (None, why not)."""
    keras = import_keras()
    if keras.backend.backend() != "tensorflow":
        return None, f"Keras runs on {keras.backend.backend()}: MirroredStrategy is TensorFlow's (torch would use DistributedDataParallel, one process per GPU)"
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    if len(gpus) < 2:
        return None, f"TensorFlow sees {len(gpus)} GPU(s); data parallelism needs at least 2"
    return tf.distribute.MirroredStrategy(), None


@contextlib.contextmanager
def layout_optimizer(enabled: bool):
    """Switch Grappler's layout optimizer (NHWC <-> NCHW rewriting on GPU) for graphs traced inside.

    On the way out the previous state comes back: on, off, or never set (TensorFlow's default,
    which is on)."""
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be True or False, got {enabled!r}")
    import tensorflow as tf

    previous = tf.config.optimizer.get_experimental_options().get("layout_optimizer")
    tf.config.optimizer.set_experimental_options({"layout_optimizer": enabled})
    try:
        yield
    finally:
        if previous is not None:
            tf.config.optimizer.set_experimental_options({"layout_optimizer": previous})
        else:
            _unset_optimizer_option("layout_optimizer", default=True)  # Grappler's layout optimizer is on by default


def _unset_optimizer_option(name: str, default: bool = True) -> None:
    """Back to "not set" (TensorFlow's default, ``default``). The public API can only set options,
    so this removes the key from the eager context's option dict, which set_experimental_options
    updates; if that private layout ever changes, the default is set explicitly instead."""
    import tensorflow as tf
    from tensorflow.python.eager import context

    ctx = context.context()
    options = getattr(ctx, "_optimizer_experimental_options", None)
    if isinstance(options, dict):
        options.pop(name, None)
        local = getattr(ctx, "_thread_local_data", None)
        if local is not None and hasattr(local, "function_call_options"):
            local.function_call_options = None  # as set_experimental_options does: rebuilt on next use
    if name in tf.config.optimizer.get_experimental_options():
        tf.config.optimizer.set_experimental_options({name: default})


# --------------------------------------------------------------------------------------------
# The article's numbers.


def article_channels_first() -> list[dict]:
    """The article's measurements (data/article_channels_first.csv): one row per experiment."""
    with ARTICLE_CSV.open() as lines:
        rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    return [dict(row, gpus=int(row["gpus"]), cf_faster_pct=float(row["cf_faster_pct"])) for row in rows]


def article_channels_first_source() -> str:
    """The comment lines at the top of the CSV: source and conditions."""
    return "\n".join(line[2:].rstrip() for line in ARTICLE_CSV.read_text().splitlines() if line.startswith("#"))


def speedup_chart(rows: list[dict], *, published: bool = True, ax=None):
    """Horizontal bars: % by which channels_first trains faster than channels_last (negative:
    channels_last is faster), the article's numbers (grey) beside ``compare_layouts`` rows.
    Rows where a layout fails are drawn as a labelled gap. Returns the figure."""
    import matplotlib.pyplot as plt

    labels, values, colors, notes = [], [], [], []
    if published:
        for row in article_channels_first():
            labels.append(f"{row['model']} · {row['gpus']} GPU · {row['precision']} (published)\n"
                          "RTX 2080 Ti · TF 1.13 · CUDA 10.0 · cuDNN 7.5")
            values.append(row["cf_faster_pct"])
            colors.append("tab:gray")
            notes.append(f"{row['qualifier']} {row['cf_faster_pct']:.0f}%")
    for row in rows:
        xla = "XLA" if row["jit_compile"] else "no XLA"
        extra = f" · {row['variant']}" if row.get("variant") else ""
        gpus = f" · {row['replicas']} GPUs" if row["replicas"] > 1 else ""
        labels.append(f"{row['model']} · {row['precision']} · {xla}{extra}{gpus} · batch {row['batch_size']}\n{row['device']}")
        if row.get("error"):
            values.append(0.0)
            colors.append("white")
            notes.append(f"only {row['winner']} runs" if row["winner"] else "neither runs")
        else:
            values.append((row["ratio"] - 1) * 100)
            colors.append("tab:blue" if row["ratio"] >= 1 else "tab:orange")
            notes.append("" if row["clear"] else "within noise")
    if ax is None:
        fig, ax = plt.subplots(figsize=(11, 1.0 + 0.5 * max(1, len(labels))))
    else:
        fig = ax.figure
    positions = np.arange(len(labels))[::-1]
    ax.barh(positions, values, color=colors, edgecolor="black", linewidth=0.5)
    ax.set_yticks(positions, labels, fontsize=7)
    ax.axvline(0, color="black", linewidth=0.8)
    span = max([abs(v) for v in values] + [10.0])
    for y, value, note in zip(positions, values, notes):
        if note:
            ax.text(value + (0.02 * span if value >= 0 else -0.02 * span), y, note, va="center",
                    ha="left" if value >= 0 else "right", fontsize=7)
    ax.set_xlim(-1.25 * span, 1.25 * span)
    ax.set_xlabel("% faster training with channels_first  (t_last / t_first - 1; negative: channels_last is faster)")
    ax.set_title("channels_first vs channels_last: the article (2019) and this run")
    fig.tight_layout()
    return fig
