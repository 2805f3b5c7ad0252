"""One-step-ahead forecasting of statsmodels' sunspot and Mauna Loa CO2 series with the project's
recurrent layers (notebook 22). Splits are chronological by the predicted value and the scaler sees the
training segment only; ``target="change"`` forecasts ``y_t - y_{t-1}`` (the remedy for CO2's trend)."""

from __future__ import annotations

import dataclasses

import keras
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import statsmodels.datasets as datasets
from statsmodels.tsa.ar_model import AutoReg, ar_select_order
from tqdm.auto import tqdm

from predcalc.layers import Mamba, MinGRU, MinLSTM

SERIES = ("sunspots", "co2")
MODELS = {
    "lstm": "Keras LSTM",
    "gru": "Keras GRU",
    "simple_rnn": "Keras SimpleRNN",
    "min_gru": "minGRU",
    "min_lstm": "minLSTM",
    "mamba": "Mamba",
}


def load_series(name: str) -> np.ndarray:
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
    """Scaled windows of one series, split chronologically; ``*_index``: the predicted values' positions."""

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
    target: str = "level"
    series: np.ndarray | None = None  # the raw series (levels), to map forecasts back

    def levels(self, scaled, part: str = "test") -> np.ndarray:
        """Scaled model outputs for ``part`` as levels in the series' units."""
        values = self.unscale(scaled)
        if self.target == "level":
            return values
        index = getattr(self, f"{part}_index")
        return self.series[index - 1] + values

    def truth(self, part: str = "test") -> np.ndarray:
        index = getattr(self, f"{part}_index")
        return self.unscale(getattr(self, f"y_{part}")) if self.series is None else self.series[index]

    def unscale(self, values):
        return np.asarray(values, dtype="float64") * self.std + self.mean

    def counts(self) -> dict[str, int]:
        return {"train": len(self.y_train), "validation": len(self.y_val), "test": len(self.y_test)}


def chronological_split(series, k: int, train: float = 0.7, validation: float = 0.15, target: str = "level") -> Windows:
    """Windows of ``k`` past values, split in time order; the scaler sees training targets only."""
    series = np.asarray(series, dtype="float64")
    if not (0 < train < 1 and 0 <= validation < 1 and train + validation < 1):
        raise ValueError(
            f"train and validation must be fractions with train + validation < 1. "
            f"Received: train={train}, validation={validation}"
        )
    if target not in ("level", "change"):
        raise ValueError(f'target must be "level" or "change". Received: target={target!r}')
    n = len(series)
    n_train = int(round(train * n))
    n_val = int(round(validation * n))
    if n_train <= k + (target == "change"):
        raise ValueError(f"the training segment ({n_train} values) must be longer than k={k}")
    if target == "level":
        mean = float(series[:n_train].mean())
        std = float(series[:n_train].std()) or 1.0
        x, y = make_windows((series - mean) / std, k)
        index = np.arange(k, n)  # position of each target in the series
    else:
        change = np.diff(series)  # change[j] = series[j + 1] - series[j]
        mean = float(change[: n_train - 1].mean())
        std = float(change[: n_train - 1].std()) or 1.0
        x, y = make_windows((change - mean) / std, k)
        index = np.arange(k + 1, n)  # y[i] = change[i + k] is the step into series[i + k + 1]
    parts = {
        "train": index < n_train,
        "val": (index >= n_train) & (index < n_train + n_val),
        "test": index >= n_train + n_val,
    }
    arrays = {f"{axis}_{part}": arr[mask] for part, mask in parts.items() for axis, arr in (("x", x), ("y", y))}
    arrays |= {f"{part}_index": index[mask] for part, mask in parts.items()}
    return Windows(k=int(k), mean=mean, std=std, **arrays, target=target, series=series.copy())


SEASONS = {"sunspots": 11, "co2": 12}  # the solar cycle in years, the year in months


def seasonal_naive_forecast(series, index, season: int) -> np.ndarray:
    """The value one season earlier: the forecast of ``series[i]`` is ``series[i - season]``."""
    return np.asarray(series, dtype="float64")[np.asarray(index) - season]


def ar_forecast(series, n_train: int, index, max_lag: int = 24, difference: bool = False) -> tuple[np.ndarray, dict]:
    """One-step AR(p) forecasts (p by BIC on ``series[:n_train]``); ``difference``: ARIMA(p, 1, 0)."""
    series = np.asarray(series, dtype="float64")
    values = np.diff(series) if difference else series
    fit_on = values[: n_train - 1] if difference else values[:n_train]
    order = ar_select_order(fit_on, maxlag=max_lag, ic="bic", trend="c").ar_lags
    lags = int(max(order)) if order else 0
    fitted = AutoReg(fit_on, lags=lags, trend="c").fit()
    const, coefs = float(fitted.params[0]), np.asarray(fitted.params[1:], dtype="float64")
    index = np.asarray(index)
    position = index - 1 if difference else index  # the value to forecast in ``values``
    forecast = np.array([const + sum(coefs[j] * values[p - 1 - j] for j in range(lags)) for p in position])
    if difference:
        forecast = series[index - 1] + forecast
    return forecast, {"lags": lags, "difference": bool(difference)}


def baselines(name: str, windows: Windows, n_train: int) -> dict:
    truth, index, series, season = windows.truth("test"), windows.test_index, windows.series, SEASONS[name]
    out = {
        "naive (last value)": forecast_metrics(truth, series[index - 1]),
        f"seasonal naive ({season})": forecast_metrics(truth, seasonal_naive_forecast(series, index, season)),
    }
    for difference, label in ((False, "AR on levels"), (True, "AR on changes")):
        forecast, info = ar_forecast(series, n_train, index, difference=difference)
        out[f"{label} (p={info['lags']})"] = forecast_metrics(truth, forecast)
    return out


def forecast_metrics(truth, prediction) -> dict[str, float]:
    error = np.asarray(prediction, dtype="float64") - np.asarray(truth, dtype="float64")
    return {"mae": float(np.mean(np.abs(error))), "rmse": float(np.sqrt(np.mean(error**2)))}


def build_model(name: str, k: int, units: int = 32, seed: int = 0, learning_rate: float = 3e-3):
    """``Input((k, 1)) -> layer -> Dense(1)``, Adam and MSE (Mamba's step loop: faster at a dozen steps)."""
    layers = {"lstm": keras.layers.LSTM, "gru": keras.layers.GRU, "simple_rnn": keras.layers.SimpleRNN}
    layers |= {"min_gru": MinGRU, "min_lstm": MinLSTM, "mamba": lambda units: Mamba(units, parallel=False)}
    if name not in layers:
        raise ValueError(f"unknown model; choose one of {', '.join(MODELS)}. Received: name={name!r}")
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((k, 1)), layers[name](units), keras.layers.Dense(1)], name=name)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate), loss="mse", jit_compile=False)
    return model


def fit_and_evaluate(
    name: str,
    windows: Windows,
    seed: int = 0,
    epochs: int = 20,
    batch_size: int = 32,
    units: int = 32,
    patience: int = 10,
) -> dict:
    """One model trained with early stopping: its test metrics in the series' units and its forecast."""
    model = build_model(name, windows.k, units, seed)
    callbacks = [keras.callbacks.EarlyStopping(patience=patience, restore_best_weights=True)]
    validation = (windows.x_val[..., None], windows.y_val)
    fit = {"epochs": epochs, "batch_size": batch_size, "callbacks": callbacks, "verbose": 0, "shuffle": True}
    history = model.fit(windows.x_train[..., None], windows.y_train, validation_data=validation, **fit)
    prediction = windows.levels(model.predict(windows.x_test[..., None], verbose=0)[:, 0], "test")
    return {
        "model": name,
        "seed": int(seed),
        "epochs": len(history.history["loss"]),
        "params": int(model.count_params()),
        "target": windows.target,
        **forecast_metrics(windows.truth("test"), prediction),
        "forecast": prediction.tolist(),
    }


def fit_all(data: dict, models, seeds, **fit_kwargs) -> list[dict]:
    runs = []
    with tqdm(total=len(data) * len(models) * len(seeds), desc="fits") as bar:
        for name, windows in data.items():
            for model_name in models:
                for seed in seeds:
                    runs.append({"series": name, **fit_and_evaluate(model_name, windows, seed=seed, **fit_kwargs)})
                    bar.update()
    return runs


SPREAD = (("", "mean"), ("_min", "min"), ("_max", "max"))  # a summary column's suffix and aggregation


def summarise(runs: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame([{key: value for key, value in run.items() if key != "forecast"} for run in runs])
    spread = {f"{column}{end}": (column.lower(), how) for column in ("MAE", "RMSE") for end, how in SPREAD}
    grouped = frame.groupby(["series", "model"], sort=False)
    summary = grouped.agg(**spread, epochs=("epochs", "mean"), params=("params", "first")).reset_index()
    summary["model"] = summary["model"].map(MODELS)
    return summary


def results_table(summary, baselines: dict) -> pd.DataFrame:
    """The networks and every baseline per series, best MAE first, with the MAE as a share of the naive one."""
    naive_rows = pd.DataFrame(
        [
            {"series": s, "model": f"baseline: {label}", "MAE": m["mae"], "RMSE": m["rmse"], "params": 0}
            for s, named in baselines.items()
            for label, m in named.items()
        ]
    )
    table = pd.concat([pd.DataFrame(summary), naive_rows]).sort_values(["series", "MAE"]).reset_index(drop=True)
    table["MAE / naive"] = table.MAE / table.series.map(
        {s: named["naive (last value)"]["mae"] for s, named in baselines.items()}
    )
    return table


def plot_forecasts(data: dict, summary, runs: list[dict]):
    keys = {label: key for key, label in MODELS.items()}
    figure, axes = plt.subplots(1, len(data), figsize=(7 * len(data), 4), squeeze=False, layout="constrained")
    for axis, (name, windows) in zip(axes[0], data.items()):
        best = summary[summary.series == name].sort_values("MAE").iloc[0]["model"]
        forecast = next(r["forecast"] for r in runs if r["series"] == name and r["model"] == keys[best])
        axis.plot(windows.test_index, windows.truth("test"), "k-", lw=1.5, label="observed")
        axis.plot(windows.test_index, windows.series[windows.test_index - 1], ":", label="naive (last value)")
        axis.plot(windows.test_index, forecast, "-", label=f"{best} (first seed)")
        title = f"{name}: test segment, one step ahead"
        axis.set(title=title, xlabel="position in the series (years / months)", ylabel=name)
        axis.legend(fontsize=8)
    return figure


def series_result(table, baselines: dict, name: str) -> dict:
    """What the study shows on series ``name``: the baselines, the best network and those that beat every baseline."""
    rows = table[table.series == name]
    strongest_label, strongest = min(baselines[name].items(), key=lambda item: item[1]["mae"])
    networks = rows[~rows.model.str.startswith("baseline: ")]
    top = networks.iloc[0]
    return {
        "naive": baselines[name]["naive (last value)"]["mae"],
        "strongest": strongest_label,
        "strongest_mae": strongest["mae"],
        "best": top.model,
        "best_mae": top.MAE,
        "best_min": top.MAE_min,
        "best_max": top.MAE_max,
        "networks": len(networks),
        "beat": networks[networks.MAE_max < strongest["mae"]].model.tolist(),
    }


def extrapolated(data: dict) -> list[str]:
    return [name for name, w in data.items() if w.truth("test").min() > w.truth("train").max()]


def study_entry(data: dict, baselines: dict, target: str, runs: list[dict], summary) -> tuple[dict, dict]:
    entry = {
        "naive": {name: named["naive (last value)"] for name, named in baselines.items()},
        "baselines": baselines,
        "target": target,
        "runs": runs,
        "summary": summary.to_dict("records"),
        "counts": {name: w.counts() for name, w in data.items()},
    }
    counts = {f"{name}_{split}": c for name, w in data.items() for split, c in w.counts().items()}
    return entry, {"seed": 0, "counts": counts}
