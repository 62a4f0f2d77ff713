"""The images to train on: CIFAR-10 when it is here, else a labelled offline stand-in (``ImageData.source``)."""

from __future__ import annotations

import os
import tempfile
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...checks import check_bool, check_int, check_path
from ...runtime.keras_backend import import_keras
from .models import CIFAR_CHANNELS, CIFAR_IMAGE_SIZE, NUM_CLASSES

#: Set to 1 to let ``load_images`` download CIFAR-10 (~170 MB) when it isn't cached.
DOWNLOAD_ENV = "FASTLSTM_DOWNLOAD"
#: Where Keras 3 keeps the downloaded archive, and where older Keras left the extracted batches.
CIFAR_ARCHIVE = "cifar-10-batches-py-target_archive"
CIFAR_ARCHIVE_BYTES = 170_498_071
CIFAR_FOLDERS = ("cifar-10-batches-py", os.path.join("cifar-10-batches-py-target", "cifar-10-batches-py"))


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

    def head(self, n_train: int) -> "ImageData":
        """The same data with only the first ``n_train`` training images (e.g. for a timed epoch)."""
        n_train = check_int("n_train", n_train)
        return ImageData(self.x_train[:n_train], self.y_train[:n_train], self.x_test, self.y_test, self.source,
                         self.description)

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
    """~/.keras/datasets, not /root/.keras/... (and <temp>/ for the temporary directory)."""
    for base, name in ((Path.home(), "~"), (Path(tempfile.gettempdir()), "<temp>"), (Path("/tmp"), "<temp>")):
        try:
            return str(Path(name) / Path(path).relative_to(base))
        except ValueError:
            continue
    return str(path)


def find_cached_cifar10(cache_dir=None) -> tuple[str, Path] | None:
    """("archive", path) if Keras 3 has the downloaded archive, ("folder", path) if the extracted
    batches are there (older Keras), None if neither: then loading it would need the network."""
    dirs = [check_path("cache_dir", cache_dir)] if cache_dir is not None else keras_cache_dirs()
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


def synthetic_images(n: int, *, image_size: int = CIFAR_IMAGE_SIZE, seed: int = 0):
    """A learnable 10-class stand-in for CIFAR-10: (uint8 (n, size, size, 3), int32 (n,)): each
    image its class's stripe pattern, shifted, scaled in contrast, plus half a unit of Gaussian noise."""
    n = check_int("n", n)
    image_size = check_int("image_size", image_size, minimum=4)
    check_int("seed", seed, minimum=0)
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
        block += 0.5 * rng.standard_normal(block.shape, dtype=np.float32)
        images[start:stop] = np.clip(127.5 + 100.0 * block, 0, 255).astype(np.uint8)
    return images, labels


def _downsample(images: np.ndarray, image_size: int) -> np.ndarray:
    factor = images.shape[1] // image_size
    n, h, w, c = images.shape
    blocks = images.reshape(n, h // factor, factor, w // factor, factor, c).astype(np.float32)
    return np.round(blocks.mean(axis=(2, 4))).astype(np.uint8)


def load_images(n_train: int | None = None, n_test: int | None = None, *, image_size: int = CIFAR_IMAGE_SIZE,
                download: bool | None = None, cache_dir=None, seed: int = 0) -> ImageData:
    """The first ``n_train`` / ``n_test`` images of CIFAR-10 if it's cached or ``download``
    (default: $FASTLSTM_DOWNLOAD == "1"), else of the synthetic set (50,000 / 10,000 when None),
    saying why in ``description``. ``image_size`` 32, 16 or 8 (block averages)."""
    if n_train is not None:
        check_int("n_train", n_train)
    if n_test is not None:
        check_int("n_test", n_test)
    image_size = check_int("image_size", image_size)
    if CIFAR_IMAGE_SIZE % image_size:
        raise ValueError(f"image_size must divide {CIFAR_IMAGE_SIZE} (32, 16, 8, ...), got {image_size}")
    download = os.environ.get(DOWNLOAD_ENV, "") == "1" if download is None else check_bool("download", download)
    check_int("seed", seed, minimum=0)
    found = find_cached_cifar10(cache_dir)  # checks cache_dir
    looked = [Path(cache_dir)] if cache_dir else keras_cache_dirs()
    note = "" if found else f"CIFAR-10 is not on this machine (looked in {', '.join(_home_relative(d) for d in looked)})"
    if found or download:
        try:
            x_train, y_train, x_test, y_test = _load_cifar10(found)
            x_train, y_train = x_train[:n_train], y_train[:n_train]
            x_test, y_test = x_test[:n_test], y_test[:n_test]
            if image_size != CIFAR_IMAGE_SIZE:
                x_train, x_test = _downsample(x_train, image_size), _downsample(x_test, image_size)
            where = f"cached at {_home_relative(found[1])}" if found else "downloaded"
            return ImageData(x_train, y_train, x_test, y_test, "cifar10",
                             f"CIFAR-10 ({where}), {len(x_train)} train / {len(x_test)} test images, {image_size}x{image_size}")
        except Exception as error:  # a failed download must not stop the course: say it, go on offline
            note = f"CIFAR-10 download failed ({type(error).__name__}: {str(error)[:120]})"
    x_train, y_train = synthetic_images(n_train or 50_000, image_size=image_size, seed=seed)
    x_test, y_test = synthetic_images(n_test or 10_000, image_size=image_size, seed=seed + 1)
    hint = f"; set {DOWNLOAD_ENV}=1 to download it" if not download else ""
    return ImageData(x_train, y_train, x_test, y_test, "synthetic",
                     f"OFFLINE SUBSTITUTE: seeded synthetic 10-class stripe images (not CIFAR-10), "
                     f"{len(x_train)} train / {len(x_test)} test, {image_size}x{image_size}, uint8. {note}{hint}.")
