"""Problem sizes, and the FLOP count every GFLOP/s figure in the course is based on."""

from __future__ import annotations

import dataclasses
import numbers


@dataclasses.dataclass(frozen=True)
class LSTMConfig:
    """A stacked LSTM forward pass: ``layers`` layers of ``hidden`` units over ``seq_len`` steps.

    Layer 0 reads ``input_size`` features; every later layer reads the ``hidden`` outputs of the
    one below. Shapes follow Keras: the input is (batch, seq_len, input_size).
    """

    batch: int
    seq_len: int
    input_size: int
    hidden: int
    layers: int = 1

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(
                    f"LSTMConfig.{field.name} must be an int, got {type(value).__name__} {value!r}"
                )
            if value < 1:
                raise ValueError(f"LSTMConfig.{field.name} must be >= 1, got {value}")
            object.__setattr__(self, field.name, int(value))

    @classmethod
    def article(cls) -> "LSTMConfig":
        """The NVIDIA blog's benchmark: hidden 512, minibatch 64, 100 steps, 4 layers, input 512."""
        return cls(batch=64, seq_len=100, input_size=512, hidden=512, layers=4)

    @classmethod
    def tiny(cls) -> "LSTMConfig":
        """Odd sizes (no multiple of any tile or block size) that the CUDA simulator runs in seconds."""
        return cls(batch=3, seq_len=5, input_size=7, hidden=13, layers=2)

    @classmethod
    def default(cls) -> "LSTMConfig":
        """``article()`` on a GPU, ``tiny()`` on the simulator."""
        from .runtime.device import DEVICE

        return cls.tiny() if DEVICE.small else cls.article()

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def flops(cfg: LSTMConfig) -> int:
    """GEMM FLOPs of one forward pass, counted as NVIDIA's blog counts them.

    Per layer and time step the gates need (batch x in) @ (in x 4H) and (batch x H) @ (H x 4H):
    2 * 4H * (in + H) * batch multiply-adds-as-two-FLOPs. The point-wise work is not counted.
    For the article's config this is 1.07e11.
    """
    if not isinstance(cfg, LSTMConfig):
        raise TypeError(f"flops() expects an LSTMConfig, got {type(cfg).__name__}")
    total = 0
    for layer in range(cfg.layers):
        inputs = cfg.input_size if layer == 0 else cfg.hidden
        total += 2 * 4 * cfg.hidden * (inputs + cfg.hidden) * cfg.batch * cfg.seq_len
    return total
