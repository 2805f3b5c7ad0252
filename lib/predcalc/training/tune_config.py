"""A ``predcalc tune`` config: its keys checked (each problem one line), the search space as
keras-tuner hyperparameters, and the split of a trial's values into builder and training arguments."""

from __future__ import annotations

import inspect
from pathlib import Path

from predcalc import paths
from predcalc.training.sweep import SweepConfigError, check_keys, is_int, read_config_file

TUNE_BUILD = paths.SCRATCH / "tune"
TUNERS = ("bayesian", "random", "hyperband")
OBJECTIVES = {"val_loss": "min", "val_mae": "min", "val_mre": "min", "val_accuracy": "max"}
TRAINING_HYPERPARAMETERS = ("learning_rate", "batch_size", "peak_learning_rate")
CONFIG_KEYS = (
    "name",
    "model",
    "tuner",
    "objective",
    "trials",
    "epochs",
    "seeds",
    "space",
    "final",
    "data_seed",
    "search_seed",
    "batch_size",
    "patience",
    "learning_rate",
    "factor",
    "initial_points",
)
FINAL_KEYS = ("seeds", "epochs", "patience")
PROJECT = "search"
RUNNER = "runner.json"  # in each trial's folder: the tuner (process) that ran it


class TuneConfigError(SweepConfigError):
    """A tune config that cannot be read or does not follow the schema (one line, naming the file)."""


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _seeds(value, fail, key: str) -> list[int]:
    if not isinstance(value, list) or not value or not all(is_int(x) for x in value):
        fail(
            f"'{key}' is a non-empty list of integers. Received: {value!r}"
            + (f" (write {key.split('.')[-1]}: [{value}])" if is_int(value) else "")
        )
    return list(value)


def _check_dimension(name: str, spec, fail) -> dict:
    """One search dimension as ``{"choices": [...]}`` or ``{"min", "max", "log", "step"}``."""
    if isinstance(spec, list):
        spec = {"choices": spec}
    if not isinstance(spec, dict):
        fail(f"space.{name} is {{choices: [...]}} or {{min: .., max: .., log: true|false}}. Received: {spec!r}")
    if "choices" in spec:
        choices = spec["choices"]
        if set(spec) - {"choices"}:
            fail(f"space.{name}: 'choices' stands alone. Received keys: {sorted(spec)}")
        if not isinstance(choices, list) or not choices:
            fail(f"space.{name}.choices is a non-empty list. Received: {choices!r}")
        kinds = {type(c) for c in choices}
        if len(kinds) > 1 and not kinds <= {int, float}:
            fail(f"space.{name}.choices mixes types: {choices!r}")
        if len(set(choices)) != len(choices):
            fail(f"space.{name}.choices repeats a value: {choices!r}")
        return {"choices": [float(c) for c in choices] if kinds == {int, float} else list(choices)}
    unknown = set(spec) - {"min", "max", "log", "step"}
    if unknown or "min" not in spec or "max" not in spec:
        fail(
            f"space.{name} is {{choices: [...]}} or {{min: .., max: .., log: true|false, step: ..}}. "
            f"Received keys: {sorted(spec)}"
        )
    low, high, log = spec["min"], spec["max"], spec.get("log", False)
    if not (_is_number(low) and _is_number(high)) or not low < high:
        fail(f"space.{name}: min and max are numbers with min < max. Received: min={low!r}, max={high!r}")
    if not isinstance(log, bool):
        fail(f"space.{name}.log is true or false. Received: {log!r}")
    if log and low <= 0:
        fail(f"space.{name}: a log-scale range needs min > 0. Received: min={low!r}")
    step = spec.get("step")
    if step is not None and not (_is_number(step) and step > 0):
        fail(f"space.{name}.step is a positive number. Received: {step!r}")
    return {"min": low, "max": high, "log": log, "step": step}


def check_config(config, where: str = "the tune config") -> dict:
    """The schema of a tune config, checked (see the module's docstring); returns it with its defaults."""
    from predcalc.models import get_spec  # the registry loads the model builders (Keras) only when a config is checked

    def fail(message):
        raise TuneConfigError(f"{where}: {message}")

    check_keys(config, CONFIG_KEYS, "tune", fail)
    config = {
        "tuner": "bayesian",
        "objective": "val_loss",
        "seeds": [0],
        "data_seed": 0,
        "search_seed": 0,
        "batch_size": 32,
        "patience": 20,
        "learning_rate": 1e-3,
        **config,
    }
    name = config.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip() or "/" in name or name.startswith(".")):
        fail(f"'name' is a folder name (text without '/', not starting with '.'). Received: {name!r}")
    if not isinstance(config.get("model"), str):
        fail(f"'model' names a registered model (e.g. model: fnn2). Received: {config.get('model')!r}")
    try:
        spec = get_spec(config["model"])
    except ValueError as error:
        fail(str(error))
    if config["tuner"] not in TUNERS:
        fail(f"'tuner' is one of {', '.join(TUNERS)}. Received: {config['tuner']!r}")
    if config["objective"] not in OBJECTIVES:
        fail(f"unknown objective {config['objective']!r}; known: {', '.join(OBJECTIVES)} (validation metrics)")
    hyperband = config["tuner"] == "hyperband"
    if hyperband and "trials" in config:
        fail("'trials' is not used by hyperband (its brackets set the trials: use 'epochs' and 'factor')")
    if not hyperband and not (is_int(config.get("trials")) and config["trials"] >= 1):
        fail(f"'trials' is a positive integer. Received: {config.get('trials')!r}")
    for key in ("epochs", "batch_size", "patience"):
        if not (is_int(config.get(key)) and config[key] >= 1):
            fail(f"'{key}' is a positive integer. Received: {config.get(key)!r}")
    for key, minimum in (("factor", 2), ("initial_points", 1)):
        if key in config and not (is_int(config[key]) and config[key] >= minimum):
            fail(f"'{key}' is an integer of at least {minimum}. Received: {config[key]!r}")
    if "factor" in config and not hyperband:
        fail("'factor' is a hyperband setting")
    if "initial_points" in config and config["tuner"] != "bayesian":
        fail("'initial_points' is a bayesian setting")
    if not (_is_number(config["learning_rate"]) and config["learning_rate"] > 0):
        fail(f"'learning_rate' is a positive number. Received: {config['learning_rate']!r}")
    for key in ("data_seed", "search_seed"):
        if not is_int(config[key]):
            fail(f"'{key}' is an integer. Received: {config[key]!r}")
    config["seeds"] = _seeds(config["seeds"], fail, "seeds")
    space = config.get("space")
    if not space:
        fail("'space' is empty: name at least one hyperparameter (e.g. space: {units: {choices: [64, 128]}})")
    if not isinstance(space, dict):
        fail(f"'space' maps hyperparameter names to ranges or choices. Received: {type(space).__name__}")
    builder = inspect.signature(spec.build).parameters
    open_builder = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in builder.values())
    arguments = [n for n in builder if n != "tokenizer" and builder[n].kind is not inspect.Parameter.VAR_KEYWORD]
    for key in space:
        if key in TRAINING_HYPERPARAMETERS:
            if key == "peak_learning_rate" and spec.optimizer.name != "adamw_reference":
                fail(
                    f"space.peak_learning_rate sets the reference schedule of adamw_reference models; {spec.name} trains "
                    f"with {spec.optimizer.name!r} (tune learning_rate instead)"
                )
        elif not (key in arguments or (open_builder and isinstance(key, str) and key.isidentifier())):
            fail(
                f"space.{key} is neither an argument of {spec.name}'s builder ({', '.join(arguments) or 'none'}) "
                f"nor one of {', '.join(TRAINING_HYPERPARAMETERS)}"
            )
    config["space"] = {key: _check_dimension(key, value, fail) for key, value in space.items()}
    final = config.get("final")
    if final is not None:
        if not isinstance(final, dict) or set(final) - set(FINAL_KEYS):
            fail(f"'final' is a mapping of {', '.join(FINAL_KEYS)}. Received: {final!r}")
        final = {"seeds": config["seeds"], "epochs": config["epochs"], "patience": config["patience"], **final}
        final["seeds"] = _seeds(final["seeds"], fail, "final.seeds")
        for key in ("epochs", "patience"):
            if not (is_int(final[key]) and final[key] >= 1):
                fail(f"'final.{key}' is a positive integer. Received: {final[key]!r}")
        config["final"] = final
    return config


def load_config(path) -> dict:
    """Reads and checks a tune config (``.yaml``/``.yml`` or ``.json``); errors are one line."""
    path = Path(path)
    config = check_config(read_config_file(path, "tune", TuneConfigError), str(path))
    config["name"] = config.get("name") or path.stem
    return config


def hyperparameters(space: dict):
    """The checked ``space`` as keras-tuner ``HyperParameters`` (Choice, Int or Float)."""
    import keras_tuner  # only when a search runs: checking a config needs no tuner

    hp = keras_tuner.HyperParameters()
    for name, dimension in space.items():
        if "choices" in dimension:
            hp.Choice(name, dimension["choices"])
            continue
        low, high, step = dimension["min"], dimension["max"], dimension["step"]
        sampling = "log" if dimension["log"] else "linear"
        if is_int(low) and is_int(high) and (step is None or is_int(step)):
            hp.Int(name, low, high, step=None if dimension["log"] else (step or 1), sampling=sampling)
        else:
            hp.Float(name, float(low), float(high), step=step, sampling=sampling)
    return hp


def split_hyperparameters(values: dict) -> tuple[dict, dict]:
    """A trial's values as (the training arguments, the builder's ``model_kwargs``); keras-tuner's
    own ``tuner/...`` entries are dropped, and ``peak_learning_rate`` rides on ``model_kwargs``."""
    training = {k: v for k, v in values.items() if k in ("learning_rate", "batch_size")}
    model_kwargs = {k: v for k, v in values.items() if not k.startswith("tuner/") and k not in training}
    return training, model_kwargs
