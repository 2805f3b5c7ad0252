"""One architecture notebook's work in a few calls: train over seeds, tabulate, plot, export, write.

Example:
    >>> results = run_seeds(["fnn_baseline", "fnn2"], seed_protocol(0), seeds=[0], epochs=5)
    >>> comparison_table(results.to_json("01_fnn", parameters))
    >>> results.write("outputs/01_fnn", notebook="01_fnn", parameters={...})
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from pathlib import Path

import keras

from predcalc import metrics as M
from predcalc.data import Protocol
from predcalc.training import TrainedModel, evaluate, run_record, train

BASELINE = "fnn_baseline"
REPORT_SETS = ("in", "out", "long")


@dataclasses.dataclass
class ModelResults:
    """Every seed's record of one model, and the first seed's model and predictions."""

    first: TrainedModel
    predictions: dict
    runs: list = dataclasses.field(default_factory=list)

    @property
    def spec(self):
        return self.first.spec


@dataclasses.dataclass
class Results:
    protocol: Protocol
    models: dict = dataclasses.field(default_factory=dict)
    exports: dict = dataclasses.field(default_factory=dict)

    def plot_predictions(self, test_sets=REPORT_SETS, path=None):
        """Predicted vs true value of each model's first seed, one panel per test set."""
        import matplotlib.pyplot as plt

        sets = self.protocol.test_sets()
        figure, axes = plt.subplots(len(self.models), len(test_sets), squeeze=False,
                                    figsize=(4 * len(test_sets), 3.6 * len(self.models)))
        for row, (name, result) in enumerate(self.models.items()):
            for column, test_set in enumerate(test_sets):
                axis, truth = axes[row][column], sets[test_set].values
                axis.scatter(truth, result.predictions[test_set], s=4, alpha=0.4)
                low, high = truth.min() - 1, truth.max() + 1
                axis.plot([low, high], [low, high], color="black", linewidth=0.8)
                axis.set_title(f"{result.spec.label}\n{test_set}: MAE "
                               f"{M.mae(truth, result.predictions[test_set]):.3g}", fontsize=9)
                axis.set_xlabel("true value")
                axis.set_ylabel("predicted")
        figure.tight_layout()
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            figure.savefig(path, dpi=110)
        return figure

    def plot_history(self, path=None):
        """Training and validation loss of each model's first seed (log scale)."""
        import matplotlib.pyplot as plt

        figure, axis = plt.subplots(figsize=(6, 3.6))
        for name, result in self.models.items():
            history = result.first.history
            line, = axis.plot(history["loss"], label=f"{result.spec.label} train")
            if "val_loss" in history:
                axis.plot(history["val_loss"], linestyle="--", color=line.get_color(), label="validation")
        axis.set_yscale("log")
        axis.set_xlabel("epoch")
        axis.set_ylabel("MSE loss")
        axis.legend(fontsize=7)
        figure.tight_layout()
        if path is not None:
            figure.savefig(path, dpi=110)
        return figure

    def export(self, directory, progress: bool = True) -> dict:
        """Export each model's first seed (SavedModel, .keras and four LiteRT formats) and check them."""
        from tqdm.auto import tqdm

        from predcalc.export import export_trained

        for name, result in tqdm(self.models.items(), desc="export", disable=not progress):
            target = Path(directory) / name
            self.exports[name] = export_trained(result.first, target, self.protocol.test_sets(),
                                                self.protocol.train.expressions)
            result.first.model.save(target / "model.keras")
        return self.exports

    def to_json(self, notebook: str, parameters: dict) -> dict:
        return {
            "notebook": notebook,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "backend": keras.backend.backend(),
            "keras": keras.__version__,
            "parameters": parameters,
            "data": {"seed": self.protocol.seed, "counts": self.protocol.counts()},
            "models": {
                name: {"label": r.spec.label, "family": r.spec.family, "seed_row": r.spec.seed_row,
                       "tokenizer": r.spec.tokenizer, "params": r.first.params, "runs": r.runs,
                       "export": self.exports.get(name)}
                for name, r in self.models.items()
            },
        }

    def write(self, directory, notebook: str, parameters: dict) -> Path:
        """Write ``metrics.json``: what ``predcalc report`` and the tests read."""
        path = Path(directory) / "metrics.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(notebook, parameters), indent=1))
        return path


def run_seeds(model_names, protocol: Protocol, seeds=(0,), epochs: int = 200, patience: int = 20,
              batch_size: int = 32, learning_rate: float = 1e-3, model_kwargs: dict | None = None,
              progress: bool = True, extra_test_sets: dict | None = None) -> Results:
    """Train and evaluate each model once per seed on the protocol.

    Args:
        model_kwargs: ``{model_name: {kwarg: value}}`` passed to the model builders.
        extra_test_sets: ``{name: Split}`` scored beside the protocol's test sets, in every
            seed's record (e.g. the extended suite's families).
    """
    from tqdm.auto import tqdm

    if not seeds:
        raise ValueError("seeds must name at least one seed")
    results = Results(protocol=protocol)
    test_sets = {**protocol.test_sets(), **(extra_test_sets or {})}
    clash = set(protocol.test_sets()) & set(extra_test_sets or {})
    if clash:
        raise ValueError(f"extra_test_sets must not reuse the protocol's names. Received: {sorted(clash)}")
    jobs = [(name, seed) for name in model_names for seed in seeds]
    for name, seed in tqdm(jobs, desc="train", disable=not progress):
        trained = train(name, protocol, seed=seed, epochs=epochs, patience=patience, batch_size=batch_size,
                        learning_rate=learning_rate, model_kwargs=(model_kwargs or {}).get(name))
        scores, predictions = evaluate(trained, test_sets)
        if name not in results.models:
            results.models[name] = ModelResults(first=trained, predictions=predictions)
        results.models[name].runs.append(run_record(trained, scores))
    return results
