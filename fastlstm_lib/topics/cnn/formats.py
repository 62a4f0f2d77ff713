"""The two layouts of an image batch, CIFAR-10's shape, and putting images into a layout (NumPy only)."""

from __future__ import annotations

import numpy as np

from ...checks import check_array, check_choice, check_int

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
