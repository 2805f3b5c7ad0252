"""The record every notebook writes, ``metrics.json``, typed: one writer, one reader.

A :class:`RunRecord` is either a *models* record (models trained on the protocol, one entry per
model with its per-seed runs) or a *study* record (a side study: no protocol models, its results
under one named entry such as ``"speed"`` or ``"calculator"``). The kind is stored, never guessed
from which keys a dict happens to have; files written before it was stored are read once through
:func:`RunRecord.from_json`, which names their kind from their entry.

Example:
    >>> record = RunRecord(notebook="21_parallel_scan", kind="study", parameters={"lengths": [64]},
    ...                    entries={"speed": {"speedups": []}})
    >>> RunRecord.from_json(record.to_json()).entries["speed"]
    {'speedups': []}
    >>> RunRecord.from_json({"notebook": "x", "kind": "nonsense", "models": {}})  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    predcalc.record.RecordError: x: kind must be one of ('models', 'study', 'llm'). Received: kind='nonsense'
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from predcalc.paths import write_json_if_changed

SCHEMA = 1
KINDS = ("models", "study", "llm")
# The named entries a study record holds (one each); anything else at the top level is kept as is.
ENTRIES = ("speed", "timeseries", "explain", "extended", "calculator", "study", "llm", "tune", "digits")
_TOP = ("schema", "notebook", "kind", "created", "backend", "keras", "parameters", "data", "models")


class RecordError(ValueError):
    """A metrics.json that does not hold what the report reads (the message names the file's notebook)."""


@dataclass
class SeedRun:
    """One training seed of one model: its scores per test set and what else the run stored."""

    seed: int
    metrics: dict[str, dict[str, Any]]
    epochs: int | None = None
    train_seconds: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        out = {"seed": self.seed}
        if self.epochs is not None:
            out["epochs"] = self.epochs
        if self.train_seconds is not None:
            out["train_seconds"] = self.train_seconds
        return {**out, **self.extra, "metrics": self.metrics}

    @classmethod
    def from_json(cls, data: dict, where: str) -> SeedRun:
        if not isinstance(data, dict) or "seed" not in data or not isinstance(data.get("metrics"), dict):
            raise RecordError(f"{where}: a run needs a seed and a metrics dict")
        extra = {k: v for k, v in data.items() if k not in ("seed", "metrics", "epochs", "train_seconds")}
        return cls(int(data["seed"]), data["metrics"], data.get("epochs"), data.get("train_seconds"), extra)


@dataclass
class ModelRecord:
    """A model trained on the protocol: its label, size, per-seed runs and export checks."""

    label: str
    params: int
    runs: list[SeedRun]
    family: str | None = None
    reference_row: str | None = None
    tokenizer: str | None = None
    export: dict | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. kept_from

    def to_json(self) -> dict:
        return {
            "label": self.label,
            "family": self.family,
            "reference_row": self.reference_row,
            "tokenizer": self.tokenizer,
            "params": self.params,
            "runs": [run.to_json() for run in self.runs],
            "export": self.export,
            **self.extra,
        }

    @classmethod
    def from_json(cls, data: dict, where: str) -> ModelRecord:
        for key in ("label", "params", "runs"):
            if key not in data:
                raise RecordError(f"{where}: a model needs {key!r}")
        known = ("label", "params", "runs", "family", "reference_row", "tokenizer", "export")
        return cls(
            data["label"],
            int(data["params"]),
            [SeedRun.from_json(run, where) for run in data["runs"]],
            data.get("family"),
            data.get("reference_row"),
            data.get("tokenizer"),
            data.get("export"),
            {k: v for k, v in data.items() if k not in known},
        )


@dataclass
class RunRecord:
    """One notebook run's ``metrics.json``."""

    notebook: str
    kind: str
    parameters: dict = field(default_factory=dict)
    models: dict[str, ModelRecord] = field(default_factory=dict)
    entries: dict[str, Any] = field(default_factory=dict)
    data: dict | None = None
    created: str | None = None
    backend: str | None = None
    keras: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise RecordError(f"{self.notebook}: kind must be one of {KINDS}. Received: kind={self.kind!r}")
        if self.kind == "study" and not self.entries:
            raise RecordError(f"{self.notebook}: a study record needs one of the entries {ENTRIES}")

    @property
    def study(self) -> str | None:
        """The study a *study* record holds, which names the section that renders it: its named entry
        (the calculator's record also stores its speed, under the calculator); None for other kinds."""
        if self.kind != "study":
            return None
        if "calculator" in self.entries:
            return "calculator"
        return next(name for name in ENTRIES if name in self.entries)

    def to_json(self) -> dict:
        out = {
            "schema": SCHEMA,
            "notebook": self.notebook,
            "kind": self.kind,
            "created": self.created,
            "backend": self.backend,
            "keras": self.keras,
            "parameters": self.parameters,
            "data": self.data,
            "models": {name: model.to_json() for name, model in self.models.items()},
        }
        return {k: v for k, v in {**out, **self.extra, **self.entries}.items() if v is not None}

    @classmethod
    def from_json(cls, data: dict) -> RunRecord:
        """A record from its JSON form; older files without a stored kind are named here, once."""
        notebook = data.get("notebook")
        if not isinstance(notebook, str):
            raise RecordError("a metrics.json needs its notebook's name")
        entries = {k: data[k] for k in ENTRIES if k in data}
        kind = data.get("kind") or ("study" if entries and not data.get("models") else "models")
        models = {
            name: ModelRecord.from_json(model, f"{notebook}/{name}")
            for name, model in (data.get("models") or {}).items()
        }
        extra = {k: v for k, v in data.items() if k not in _TOP and k not in entries}
        return cls(
            notebook,
            kind,
            data.get("parameters") or {},
            models,
            entries,
            data.get("data"),
            data.get("created"),
            data.get("backend"),
            data.get("keras"),
            extra,
        )

    @classmethod
    def load(cls, path) -> RunRecord:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise RecordError(f"{path}: not JSON ({error.msg} at line {error.lineno})") from None
        return cls.from_json(data)

    def write(self, folder) -> Path:
        """Write ``folder/metrics.json`` (the one writer every notebook uses). A rerun whose numbers
        are unchanged keeps the stored file as it is, its ``created`` time and training times
        included (:func:`predcalc.paths.write_json_if_changed`)."""

        path = Path(folder) / "metrics.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        if self.created is None:
            self.created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        write_json_if_changed(path, self.to_json())
        return path


def write_study(
    folder, notebook: str, entry: str, value, parameters: dict, data: dict | None = None, kind: str = "study", **extra
) -> Path:
    """Write a study notebook's record: its one named ``entry`` (``"speed"``, ``"calculator"``...)."""
    import keras  # the backend the study ran on; reading a record needs no Keras

    if entry not in ENTRIES:
        raise RecordError(f"{notebook}: entry must be one of {ENTRIES}. Received: entry={entry!r}")
    record = RunRecord(
        notebook,
        kind,
        parameters,
        {},
        {entry: value},
        data,
        backend=keras.backend.backend(),
        keras=keras.__version__,
        extra=extra,
    )
    path = record.write(folder)
    print(f"wrote {path}")
    return path


def write_record(data: dict, folder) -> Path:
    """Check a record in its JSON form against :class:`RunRecord`, write ``folder/metrics.json`` and
    say where (what a notebook that builds its record as a dict calls)."""
    path = RunRecord.from_json(data).write(folder)
    print(f"wrote {path}")
    return path
