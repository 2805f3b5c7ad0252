"""One-step-ahead forecasting of real time series with the project's recurrent layers
(notebook 22).

The series ship inside statsmodels (no download): yearly sunspot numbers 1700-2008 and the
Mauna Loa CO2 record (weekly 1958-2001, averaged per month, gaps interpolated). A model reads
the past ``k`` values and predicts the next one. Splits are chronological by the index of the
predicted value: every training target comes before every validation target, which comes
before every test target; inputs may reach back into the previous segment (they are the past,
known at forecast time). The scaler (mean, std) is fitted on the training segment only.
"""

from __future__ import annotations

import dataclasses

import numpy as np

SERIES = ("sunspots", "co2")
MODELS = {"lstm": "Keras LSTM", "gru": "Keras GRU", "simple_rnn": "Keras SimpleRNN",
          "min_gru": "minGRU", "min_lstm": "minLSTM", "mamba": "Mamba"}


def load_series(name: str) -> np.ndarray:
    """The named series (one of ``SERIES``) as a float64 array, from the installed statsmodels."""
    import statsmodels.datasets as datasets

    if name == "sunspots":
        return datasets.sunspots.load_pandas().data["SUNACTIVITY"].to_numpy(dtype="float64")
    if name == "co2":
        weekly = datasets.co2.load_pandas().data["co2"]
        monthly = weekly.resample("MS").mean().interpolate()
        return monthly.to_numpy(dtype="float64")
    raise ValueError(f"unknown series; choose one of {', '.join(SERIES)}. Received: name={name!r}")


def make_windows(series, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``x[i] = series[i:i + k]`` and ``y[i] = series[i + k]`` for every full window."""
    series = np.asarray(series, dtype="float64")
    if series.ndim != 1:
        raise ValueError(f"series must be one-dimensional. Received: shape={series.shape}")
    if not isinstance(k, (int, np.integer)) or k < 1 or k >= len(series):
        raise ValueError(f"k must be an integer in [1, {len(series) - 1}]. Received: k={k}")
    x = np.lib.stride_tricks.sliding_window_view(series, k)[:-1].copy()  # (n - k, k)
    y = series[k:].copy()  # (n - k,)
    return x, y


@dataclasses.dataclass
class Windows:
    """Scaled windows of one series, split chronologically; ``*_index`` are the positions of
    the predicted values in the series."""

    k: int
    mean: float
    std: float
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    train_index: np.ndarray
    val_index: np.ndarray
    test_index: np.ndarray

    def scale(self, values):
        return (np.asarray(values, dtype="float64") - self.mean) / self.std

    def unscale(self, values):
        return np.asarray(values, dtype="float64") * self.std + self.mean

    def counts(self) -> dict[str, int]:
        return {"train": len(self.y_train), "validation": len(self.y_val), "test": len(self.y_test)}


def chronological_split(series, k: int, train: float = 0.7, validation: float = 0.15) -> Windows:
    """Windows of ``k`` past values; targets split in time order ``train | validation | test``.

    The boundaries are on the series: values ``[0, n_train)`` are training targets (and the
    only values the scaler sees), ``[n_train, n_train + n_val)`` validation targets, the rest
    test targets.
    """
    series = np.asarray(series, dtype="float64")
    if not (0 < train < 1 and 0 <= validation < 1 and train + validation < 1):
        raise ValueError(f"train and validation must be fractions with train + validation < 1. "
                         f"Received: train={train}, validation={validation}")
    n = len(series)
    n_train = int(round(train * n))
    n_val = int(round(validation * n))
    if n_train <= k:
        raise ValueError(f"the training segment ({n_train} values) must be longer than k={k}")
    mean = float(series[:n_train].mean())
    std = float(series[:n_train].std()) or 1.0
    x, y = make_windows((series - mean) / std, k)
    index = np.arange(k, n)  # position of each target in the series
    parts = {"train": index < n_train, "val": (index >= n_train) & (index < n_train + n_val),
             "test": index >= n_train + n_val}
    return Windows(k=int(k), mean=mean, std=std,
                   **{f"{axis}_{part}": arr[mask] for part, mask in parts.items()
                      for axis, arr in (("x", x), ("y", y))},
                   **{f"{part}_index": index[mask] for part, mask in parts.items()})


def naive_forecast(x) -> np.ndarray:
    """The last-value baseline: the forecast of ``y[i]`` is ``x[i, -1]``."""
    return np.asarray(x)[:, -1]


def forecast_metrics(truth, prediction) -> dict[str, float]:
    """``{"mae", "rmse"}`` of a forecast."""
    error = np.asarray(prediction, dtype="float64") - np.asarray(truth, dtype="float64")
    return {"mae": float(np.mean(np.abs(error))), "rmse": float(np.sqrt(np.mean(error ** 2)))}


def build_model(name: str, k: int, units: int = 32, seed: int = 0, learning_rate: float = 3e-3):
    """``Input((k, 1)) -> recurrent layer -> Dense(1)``, compiled with Adam and MSE (no XLA).

    Mamba runs its step loop: the same function as its parallel scan (tested equal), and at
    a dozen steps on a CPU the faster one (``10_mamba`` times both).

    ``name`` is a key of ``MODELS``.
    """
    import keras

    from predcalc.layers import Mamba, MinGRU, MinLSTM

    layers = {"lstm": lambda: keras.layers.LSTM(units), "gru": lambda: keras.layers.GRU(units),
              "simple_rnn": lambda: keras.layers.SimpleRNN(units), "min_gru": lambda: MinGRU(units),
              "min_lstm": lambda: MinLSTM(units), "mamba": lambda: Mamba(units, parallel=False)}
    if name not in layers:
        raise ValueError(f"unknown model; choose one of {', '.join(MODELS)}. Received: name={name!r}")
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((k, 1)), layers[name](), keras.layers.Dense(1)], name=name)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate), loss="mse", jit_compile=False)
    return model


def fit_and_evaluate(name: str, windows: Windows, seed: int = 0, epochs: int = 20, batch_size: int = 32,
                     units: int = 32, patience: int = 10) -> dict:
    """Trains one model on the training windows (early stopping on validation loss) and
    returns its test metrics in the series' units plus the test forecast."""
    import keras

    model = build_model(name, windows.k, units, seed)
    callbacks = [keras.callbacks.EarlyStopping(patience=patience, restore_best_weights=True)]
    history = model.fit(windows.x_train[..., None], windows.y_train, epochs=epochs, batch_size=batch_size,
                        validation_data=(windows.x_val[..., None], windows.y_val), callbacks=callbacks,
                        verbose=0, shuffle=True)
    prediction = windows.unscale(model.predict(windows.x_test[..., None], verbose=0)[:, 0])
    return {"model": name, "seed": int(seed), "epochs": len(history.history["loss"]),
            "params": int(model.count_params()),
            **forecast_metrics(windows.unscale(windows.y_test), prediction), "forecast": prediction.tolist()}
