"""The training side: a small model, fit() on a dataset, and the yardstick with nothing overlapping (a plain loop)."""

from __future__ import annotations

from ...checks import check_int, check_keras_model
from ...runtime.keras_backend import import_keras, tensorflow_reason
from ...timing import wall_times
from .timeline import Timeline, now

_MODEL_HINT = " (e.g. from small_model)"


def small_model(n_features: int = 32, hidden: int = 64, *, seed: int = 0):
    """A compiled two-layer MLP (ReLU, MSE, SGD) with seeded weights: the 'training step'."""
    n_features = check_int("n_features", n_features)
    hidden = check_int("hidden", hidden)
    seed = check_int("seed", seed, minimum=0)
    keras = import_keras()
    init = keras.initializers.GlorotUniform
    model = keras.Sequential([
        keras.Input((n_features,)),
        keras.layers.Dense(hidden, activation="relu", kernel_initializer=init(seed=seed)),
        keras.layers.Dense(hidden, activation="relu", kernel_initializer=init(seed=seed + 1)),
        keras.layers.Dense(1, kernel_initializer=init(seed=seed + 2)),
    ])
    model.compile(optimizer="sgd", loss="mse")
    return model


def _check_trainable(model):
    keras = check_keras_model("model", model, hint=_MODEL_HINT)
    if not getattr(model, "compiled", True):
        raise ValueError("model must be compiled before training (model.compile(...)); small_model() returns one that is")
    return keras


def _check_timeline(timeline) -> Timeline:
    timeline = timeline if timeline is not None else Timeline()
    if not isinstance(timeline, Timeline):
        raise TypeError(f"timeline must be a Timeline, got {type(timeline).__name__}")
    return timeline


def feed_and_train(data, model, *, epochs: int = 4, timeline: Timeline | None = None) -> dict:
    """``model.fit(data, epochs=epochs, shuffle=False)`` on a PyDataset or a tf.data.Dataset,
    recorded by a ``Timeline``: its ``to_dict()``."""
    keras = _check_trainable(model)
    is_tf_data = False
    if tensorflow_reason() is None:
        import tensorflow as tf

        is_tf_data = isinstance(data, tf.data.Dataset)
    if not (isinstance(data, keras.utils.PyDataset) or is_tf_data):
        raise TypeError(f"data must be a keras.utils.PyDataset (e.g. SlowBatches) or a tf.data.Dataset, got {type(data).__name__}")
    epochs = check_int("epochs", epochs)
    timeline = _check_timeline(timeline)
    # shuffle=False: fit() would otherwise hand the enqueuer the batch indices in a random order.
    model.fit(data, epochs=epochs, shuffle=False, verbose=0, callbacks=[timeline.callback()])
    return timeline.to_dict()


def train_in_a_loop(dataset, model, *, epochs: int = 4, timeline: Timeline | None = None) -> dict:
    """``x, y = dataset[i]`` then ``model.train_on_batch(x, y)`` for every i, in this thread, recorded
    like ``feed_and_train`` (a step spans getting the batch and training on it)."""
    keras = _check_trainable(model)
    if not isinstance(dataset, keras.utils.PyDataset):
        raise TypeError(f"dataset must be a keras.utils.PyDataset (e.g. SlowBatches), got {type(dataset).__name__}")
    epochs = check_int("epochs", epochs)
    timeline = _check_timeline(timeline)
    for epoch in range(epochs):
        epoch_start = now()
        for index in range(len(dataset)):
            step_start = now()
            x, y = dataset[index]
            model.train_on_batch(x, y)
            timeline.steps.append((epoch, index, step_start, now()))
        timeline.epochs.append((epoch, epoch_start, now()))
    return timeline.to_dict()


def train_step_ms(model, batch, *, warmup: int = 3, repeats: int = 20) -> list[float]:
    """Milliseconds per ``model.train_on_batch(x, y)`` on a batch that is already made."""
    _check_trainable(model)
    if not isinstance(batch, tuple) or len(batch) != 2:
        raise TypeError(f"batch must be a tuple (x, y), e.g. from make_batch, got {type(batch).__name__}")
    x, y = batch
    return wall_times(lambda: model.train_on_batch(x, y), warmup=check_int("warmup", warmup, minimum=0),
                      repeats=check_int("repeats", repeats))
