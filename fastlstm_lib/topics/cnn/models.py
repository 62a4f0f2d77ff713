"""The two layouts of an image batch (``to_layout``), the models, each built in either (the
article's ``cnn10`` and ``wide_resnet``, and the Keras example, whose Flatten shows a pitfall), and
the check that both layouts compute the same function (``copy_weights``, ``max_output_difference``).
"""

from __future__ import annotations

import inspect

import numpy as np

from ...checks import check_array, check_choice, check_fraction, check_int, check_keras_model
from ...runtime.keras_backend import import_keras, strict_float32

#: channels_last (NHWC, Keras' default) and channels_first (NCHW).
DATA_FORMATS = ("channels_last", "channels_first")
NUM_CLASSES = 10
#: CIFAR-10 as stored: 32x32 RGB, uint8, channels last.
CIFAR_IMAGE_SIZE = 32
CIFAR_CHANNELS = 3


def check_data_format(data_format) -> str:
    """"channels_last" or "channels_first": ValueError otherwise (NHWC / NCHW are TensorFlow's names)."""
    return check_choice("data_format", data_format, DATA_FORMATS)


def channel_axis(data_format: str) -> int:
    """The axis BatchNormalization normalizes over: 1 in NCHW, the last one in NHWC."""
    return 1 if check_data_format(data_format) == "channels_first" else -1


def input_shape(data_format: str, image_size: int) -> tuple[int, int, int]:
    """The shape of one RGB image as the model sees it: (H, W, C) or (C, H, W)."""
    check_data_format(data_format)
    image_size = check_int("image_size", image_size)
    if data_format == "channels_first":
        return (CIFAR_CHANNELS, image_size, image_size)
    return (image_size, image_size, CIFAR_CHANNELS)


def to_layout(images: np.ndarray, data_format: str) -> np.ndarray:
    """uint8 channels_last images -> float32 in [0, 1], in ``data_format``; channels_first is
    copied after ``np.transpose`` (a view) so that NCHW is the real order in memory."""
    check_array("images", images, (np.uint8,))
    if images.ndim != 4 or images.shape[-1] != CIFAR_CHANNELS:
        raise ValueError(f"images must be channels_last RGB images (N, H, W, 3), got shape {images.shape}")
    check_data_format(data_format)
    x = images.astype(np.float32) / np.float32(255.0)
    if data_format == "channels_first":
        x = np.ascontiguousarray(np.transpose(x, [0, 3, 1, 2]))
    return x


_HINT = " (e.g. from cnn10 or wide_resnet)"


def cnn10(data_format: str = "channels_last", *, image_size: int = CIFAR_IMAGE_SIZE, width: int = 64,
          bn_momentum: float = 0.99, num_classes: int = NUM_CLASSES):
    """The channels_first post's "10-layer CNN", as reconstructed here: 9 conv-BN-ReLU layers and
    1 Dense.

    The post gives the depth and the kind of block (convolution, BatchNormalization, ReLU,
    global average pooling), not the layers; these are ours, with ``w = width``:

        stage 1: 3 x [Conv2D(w, 3x3, padding same, no bias) - BatchNormalization - ReLU]
                 MaxPooling2D(2)
        stage 2: 3 x [Conv2D(2w, ...) - BatchNormalization - ReLU], MaxPooling2D(2)
        stage 3: 3 x [Conv2D(4w, ...) - BatchNormalization - ReLU]
        GlobalAveragePooling2D, Dense(num_classes, softmax)

    10 layers with weights (9 convolutions and the Dense). Full size: w = 64 (64/128/256
    filters) on 32x32 images: 1,926,602 parameters (1,923,914 trainable; the rest are
    BatchNormalization's moving statistics). The convolutions have no bias: the
    BatchNormalization after each has an offset that does that job. The output layer runs in
    float32 under mixed precision, so the softmax and the loss stay accurate.

    ``bn_momentum``: how slowly BatchNormalization's moving mean and variance (used at test
    time) follow the batches; Keras' 0.99 leaves 0.99^n of their initial value after n steps,
    so a run of a few dozen steps (notebook 21's CPU stand-in trains 48: 0.99^48 = 0.62) needs
    a smaller one (0.9) to be evaluated at all.
    """
    keras = import_keras()
    check_data_format(data_format)
    image_size = check_int("image_size", image_size)
    width = check_int("width", width)
    bn_momentum = check_fraction("bn_momentum", bn_momentum)
    num_classes = check_int("num_classes", num_classes, minimum=2)
    if image_size % 4:
        raise ValueError(f"image_size must be divisible by 4 (two 2x2 poolings), got {image_size}")
    layers = keras.layers
    inputs = keras.Input(shape=input_shape(data_format, image_size), name="images")
    x = inputs
    for stage in (1, 2, 3):
        for index in (1, 2, 3):
            name = f"{stage}_{index}"
            x = layers.Conv2D(width * 2 ** (stage - 1), 3, padding="same", use_bias=False, data_format=data_format,
                              name=f"conv{name}")(x)
            x = layers.BatchNormalization(axis=channel_axis(data_format), momentum=bn_momentum, name=f"bn{name}")(x)
            x = layers.Activation("relu", name=f"relu{name}")(x)
        if stage < 3:
            x = layers.MaxPooling2D(2, data_format=data_format, name=f"pool{stage}")(x)
    x = layers.GlobalAveragePooling2D(data_format=data_format, name="avgpool")(x)  # easy to forget
    outputs = layers.Dense(num_classes, activation="softmax", dtype="float32", name="predictions")(x)
    return keras.Model(inputs, outputs, name=f"cnn10_{data_format}")


def wide_resnet(data_format: str = "channels_last", *, depth: int = 28, width_factor: int = 10, dropout: float = 0.0,
                image_size: int = CIFAR_IMAGE_SIZE, bn_momentum: float = 0.99, num_classes: int = NUM_CLASSES):
    """WideResNet-depth-k (Zagoruyko & Komodakis 2016), pre-activation blocks.

    depth = 6n + 4: a 3x3 conv with 16 filters, then 3 groups of n blocks with 16k, 32k, 64k
    filters (strides 1, 2, 2), then BN-ReLU-global average pool-dense. A block is
    BN-ReLU-conv3x3-BN-ReLU-(dropout)-conv3x3 plus a shortcut: the identity, or a 1x1 conv
    when the width or the stride changes. WRN-28-10 has 36.5M trainable parameters.
    ``bn_momentum`` as in ``cnn10``.
    """
    keras = import_keras()
    check_data_format(data_format)
    depth = check_int("depth", depth, minimum=10)
    if (depth - 4) % 6:
        raise ValueError(f"depth must be 6n + 4 (10, 16, 22, 28, 40, ...), got {depth}")
    width_factor = check_int("width_factor", width_factor)
    dropout = check_fraction("dropout", dropout)
    image_size = check_int("image_size", image_size)
    bn_momentum = check_fraction("bn_momentum", bn_momentum)
    num_classes = check_int("num_classes", num_classes, minimum=2)
    if image_size % 4:
        raise ValueError(f"image_size must be divisible by 4 (two stride-2 groups), got {image_size}")
    layers = keras.layers
    axis = channel_axis(data_format)

    def conv(filters, size, stride, name):
        # No bias: every conv is followed by a BatchNormalization, whose offset does that job.
        return layers.Conv2D(filters, size, strides=stride, padding="same", use_bias=False, data_format=data_format, name=name)

    def bn_relu(x, name):
        x = layers.BatchNormalization(axis=axis, momentum=bn_momentum, name=f"{name}_bn")(x)
        return layers.Activation("relu", name=f"{name}_relu")(x)

    def block(x, filters, stride, name):
        pre = bn_relu(x, f"{name}_pre")
        y = conv(filters, 3, stride, f"{name}_conv1")(pre)
        y = bn_relu(y, f"{name}_mid")
        if dropout:
            y = layers.Dropout(dropout, name=f"{name}_dropout")(y)
        y = conv(filters, 3, 1, f"{name}_conv2")(y)
        changes = x.shape[axis] != filters or stride != 1
        shortcut = conv(filters, 1, stride, f"{name}_shortcut")(pre) if changes else x
        return layers.Add(name=f"{name}_add")([y, shortcut])

    inputs = keras.Input(shape=input_shape(data_format, image_size), name="images")
    x = conv(16, 3, 1, "stem_conv")(inputs)
    for group, (base, stride) in enumerate(zip((16, 32, 64), (1, 2, 2)), start=1):
        for index in range((depth - 4) // 6):
            x = block(x, base * width_factor, stride if index == 0 else 1, f"group{group}_block{index + 1}")
    x = bn_relu(x, "head")
    x = layers.GlobalAveragePooling2D(data_format=data_format, name="avgpool")(x)  # easy to forget
    outputs = layers.Dense(num_classes, activation="softmax", dtype="float32", name="predictions")(x)
    return keras.Model(inputs, outputs, name=f"wrn_{depth}_{width_factor}_{data_format}")


def keras_example_cnn(data_format: str = "channels_last", *, image_size: int = CIFAR_IMAGE_SIZE, width: int = 32,
                      blocks: int = 2, dense_units: int = 512):
    """The classic Keras CIFAR-10 example: [conv-conv-pool-dropout 0.25] x blocks, Flatten, Dense,
    dropout 0.5, Dense (softmax). Here for its Flatten: ``copy_weights`` permutes the Dense rows after it."""
    keras = import_keras()
    check_data_format(data_format)
    image_size = check_int("image_size", image_size)
    width = check_int("width", width)
    blocks = check_int("blocks", blocks)
    dense_units = check_int("dense_units", dense_units)
    if image_size % 2**blocks:
        raise ValueError(f"image_size must be divisible by 2**blocks = {2**blocks} (one 2x2 pool per block), got {image_size}")
    layers = keras.layers
    inputs = keras.Input(shape=input_shape(data_format, image_size), name="images")
    x = inputs
    for block in range(1, blocks + 1):
        for conv in (1, 2):
            x = layers.Conv2D(width * 2 ** (block - 1), 3, padding="same", activation="relu", data_format=data_format,
                              name=f"conv{block}_{conv}")(x)
        x = layers.MaxPooling2D(2, data_format=data_format, name=f"pool{block}")(x)
        x = layers.Dropout(0.25, name=f"dropout{block}")(x)
    # Flatten in memory order in both layouts: (h, w, c) for NHWC, (c, h, w) for NCHW, so the
    # Dense rows after it differ between the layouts (copy_weights permutes them). Said
    # explicitly: Flatten's default comes from ~/.keras/keras.json ("image_data_format"), and
    # Flatten(data_format="channels_first") would first transpose NCHW back to NHWC.
    x = layers.Flatten(data_format="channels_last", name="flatten")(x)
    x = layers.Dense(dense_units, activation="relu", name="dense")(x)
    x = layers.Dropout(0.5, name="dropout_dense")(x)
    outputs = layers.Dense(NUM_CLASSES, activation="softmax", dtype="float32", name="predictions")(x)
    return keras.Model(inputs, outputs, name=f"keras_example_cnn_{data_format}")


BUILDERS = {"cnn10": cnn10, "wide_resnet": wide_resnet, "keras_example_cnn": keras_example_cnn}
#: The options that size each model, at the size the article trained (32x32 images).
FULL_SIZE = {"cnn10": {"width": 64}, "wide_resnet": {"depth": 28, "width_factor": 10},
             "keras_example_cnn": {"width": 32, "blocks": 2, "dense_units": 512}}
#: The article's names for its two models.
ARTICLE_NAMES = {"cnn10": "10-layer CNN", "wide_resnet": "WRN-28-10"}


def check_model_name(model) -> str:
    """One of BUILDERS' names: ValueError otherwise."""
    return check_choice("model", model, tuple(BUILDERS))


def build(model: str, data_format: str, **options):
    """``build("cnn10", "channels_first", width=8, image_size=16)``: one of BUILDERS by name."""
    return BUILDERS[check_model_name(model)](data_format, **options)


def model_label(model: str, image_size: int = CIFAR_IMAGE_SIZE, **options) -> str:
    """The name tables and charts use: "WRN-28-10" at the article's size, else a stand-in, e.g.
    "10-layer CNN (stand-in: width 8, 16x16 images)"."""
    check_model_name(model)
    image_size = check_int("image_size", image_size)
    known = [name for name, parameter in inspect.signature(BUILDERS[model]).parameters.items()
             if parameter.kind is inspect.Parameter.KEYWORD_ONLY]
    for name, value in options.items():
        if name not in known:
            raise TypeError(f"{model}() has no option {name!r}; its options are {known}")
        if name in FULL_SIZE[model]:
            check_int(name, value)
    size = {**FULL_SIZE[model], **{k: v for k, v in options.items() if k in FULL_SIZE[model]}}
    if model == "keras_example_cnn":
        return f"Keras example CNN (width {size['width']}, {image_size}x{image_size} images; not the article's)"
    if size == FULL_SIZE[model] and image_size == CIFAR_IMAGE_SIZE:
        return ARTICLE_NAMES[model]
    if model == "cnn10":
        return f"10-layer CNN (stand-in: width {size['width']}, {image_size}x{image_size} images)"
    return f"WRN-{size['depth']}-{size['width_factor']} (stand-in for WRN-28-10, {image_size}x{image_size} images)"


def model_data_format(model) -> str:
    """The data_format of a model's convolutions (all of them must agree)."""
    keras = check_keras_model("model", model, hint=_HINT)
    formats = {layer.data_format for layer in model.layers if isinstance(layer, keras.layers.Conv2D)}
    if len(formats) != 1:
        raise ValueError(f"expected a model whose Conv2D layers share one data_format, found {sorted(formats) or 'no Conv2D'}")
    return formats.pop()


def layer_table(model) -> list[tuple[str, tuple, int]]:
    """(layer name, output shape without the batch, parameter count) for every layer."""
    check_keras_model("model", model, hint=_HINT)
    return [(layer.name, tuple(layer.output.shape[1:]), layer.count_params()) for layer in model.layers]


def trainable_count(model) -> int:
    """Trainable parameters (count_params() also counts BatchNormalization's moving statistics)."""
    check_keras_model("model", model, hint=_HINT)
    return sum(int(np.prod(weight.shape)) for weight in model.trainable_weights)


def flatten_rows_to_channels_first(kernel: np.ndarray, height: int, width: int, channels: int) -> np.ndarray:
    """Reorder the rows of a Dense kernel that follows Flatten, from NHWC order to NCHW order.

    Flatten of an (H, W, C) map puts feature (h, w, c) in row (h*W + w)*C + c; of a (C, H, W)
    map, in row (c*H + h)*W + w. Same features, other rows: to compute the same function the
    Dense kernel's rows must move with them.
    """
    if not isinstance(kernel, np.ndarray) or kernel.ndim != 2:
        raise TypeError(f"kernel must be a 2-D NumPy array (inputs, units), got {getattr(kernel, 'shape', type(kernel).__name__)}")
    height, width, channels = (check_int(name, value) for name, value in
                               (("height", height), ("width", width), ("channels", channels)))
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
    keras = check_keras_model("source", source, hint=_HINT)
    check_keras_model("target", target, hint=_HINT)
    if model_data_format(source) != "channels_last" or model_data_format(target) != "channels_first":
        raise ValueError("copy_weights(source, target) expects a channels_last source and a channels_first target")
    if [layer.name for layer in source.layers] != [layer.name for layer in target.layers]:
        raise ValueError("source and target must be the same architecture (same layer names in the same order)")
    permuted = []
    previous = previous_target = None
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


def twin_models(model: str, *, seed: int = 0, **options):
    """The same model in both layouts with the same weights: (channels_last, channels_first)."""
    keras = import_keras()
    keras.utils.set_random_seed(check_int("seed", seed, minimum=0))
    last = build(model, "channels_last", **options)
    first = build(model, "channels_first", **options)
    copy_weights(last, first)
    return last, first


def predict(model, images: np.ndarray) -> np.ndarray:
    """Class probabilities for uint8 channels_last images, in the model's own layout, 256 at a time
    (direct calls: ``model.predict`` would trace a new tf.function per model)."""
    keras = import_keras()
    x = to_layout(images, model_data_format(model))
    batches = [keras.ops.convert_to_numpy(model(x[i:i + 256], training=False)) for i in range(0, len(x), 256)]
    return np.concatenate(batches).astype(np.float32)


def max_output_difference(model_last, model_first, images: np.ndarray) -> float:
    """max |p_last - p_first| over the class probabilities of the same images (TF32 off)."""
    with strict_float32():
        return float(np.max(np.abs(predict(model_last, images) - predict(model_first, images))))
