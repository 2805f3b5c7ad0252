import numpy as np
import pytest

from predcalc.studies import timeseries as ts


def test_windows_are_exact_on_a_tiny_array():
    x, y = ts.make_windows([10, 11, 12, 13, 14], k=2)
    np.testing.assert_array_equal(x, [[10, 11], [11, 12], [12, 13]])
    np.testing.assert_array_equal(y, [12, 13, 14])
    with pytest.raises(ValueError, match="k=5"):
        ts.make_windows([1, 2, 3, 4, 5], k=5)
    with pytest.raises(ValueError, match="one-dimensional"):
        ts.make_windows(np.zeros((3, 2)), k=1)


def test_split_is_chronological_and_scaled_on_train_only():
    series = np.arange(20, dtype=float) ** 1.5
    w = ts.chronological_split(series, k=3, train=0.5, validation=0.25)
    assert w.counts() == {"train": 7, "validation": 5, "test": 5}
    np.testing.assert_array_equal(w.train_index, np.arange(3, 10))
    np.testing.assert_array_equal(w.val_index, np.arange(10, 15))
    np.testing.assert_array_equal(w.test_index, np.arange(15, 20))
    assert w.mean == pytest.approx(series[:10].mean()) and w.std == pytest.approx(series[:10].std())
    # windows and targets are the scaled series at the stated positions
    np.testing.assert_allclose(w.unscale(w.y_test), series[15:])
    np.testing.assert_allclose(w.unscale(w.x_test[0]), series[12:15])
    np.testing.assert_allclose(w.unscale(w.x_train[-1]), series[6:9])


def test_no_leakage_from_future_values():
    series = np.sin(np.arange(40.0))
    changed = series.copy()
    changed[28:] += 100.0  # alter only values after the training and validation targets
    a = ts.chronological_split(series, k=4, train=0.5, validation=0.2)
    b = ts.chronological_split(changed, k=4, train=0.5, validation=0.2)
    assert a.val_index.max() < 28 <= b.test_index.min()
    assert (a.mean, a.std) == (b.mean, b.std)
    for name in ("x_train", "y_train", "x_val", "y_val"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.train_index.max() < a.val_index.min() and a.val_index.max() < a.test_index.min()


def test_last_value_baseline_and_metrics_are_exact():
    x, y = ts.make_windows([1.0, 3.0, 2.0, 6.0], k=2)
    np.testing.assert_array_equal(x[:, -1], [3.0, 2.0])  # the last value forecasts targets 2, 6
    assert ts.forecast_metrics(y, x[:, -1]) == {"mae": 2.5, "rmse": pytest.approx(np.sqrt(8.5))}


def test_series_load_offline_and_models_build():
    sunspots, co2 = ts.load_series("sunspots"), ts.load_series("co2")
    assert len(sunspots) == 309 and sunspots[0] == 5.0
    assert not np.isnan(co2).any() and 300 < co2.min() < co2.max() < 380
    with pytest.raises(ValueError, match="name='airline'"):
        ts.load_series("airline")
    with pytest.raises(ValueError, match="name='tcn'"):
        ts.build_model("tcn", k=4)
    for name in ts.MODELS:
        model = ts.build_model(name, k=4, units=4)
        assert model.predict(np.zeros((2, 4, 1)), verbose=0).shape == (2, 1)


def test_change_target_maps_back_to_levels_exactly():
    from predcalc.studies import timeseries as ts

    series = np.cumsum(np.arange(40, dtype="float64")) * 0.5 + 3.0  # a trend
    w = ts.chronological_split(series, k=4, target="change")
    np.testing.assert_allclose(w.levels(w.y_test, "test"), series[w.test_index])
    np.testing.assert_allclose(w.truth("test"), series[w.test_index])
    # inputs of a window: the k changes before its target, scaled on training changes only
    change = np.diff(series)
    i = 0
    np.testing.assert_allclose(w.unscale(w.x_train[i]), change[w.train_index[i] - 5 : w.train_index[i] - 1])
    assert w.train_index.max() < w.val_index.min() < w.test_index.min()


def test_seasonal_naive_and_ar_baselines():
    from predcalc.studies import timeseries as ts

    series = np.tile([1.0, 5.0, 2.0], 10)
    np.testing.assert_array_equal(ts.seasonal_naive_forecast(series, [6, 7, 8], 3), [1.0, 5.0, 2.0])
    # a noiseless AR(1) around a constant is forecast exactly from its fitted coefficients
    rng = np.random.default_rng(0)
    values = [0.0]
    for _ in range(299):
        values.append(2.0 + 0.6 * values[-1] + 0.01 * rng.normal())
    values = np.array(values)
    forecast, info = ts.ar_forecast(values, 200, np.arange(210, 300), max_lag=4)
    assert info["lags"] >= 1
    assert np.max(np.abs(forecast - values[210:300])) < 0.06
