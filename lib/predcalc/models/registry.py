"""The model registry: every architecture the notebooks train, by name.

A model is registered with the tokeniser it reads and, where the prior report published a row for
it, the name of that row in :mod:`predcalc.report.anchors`. A model that competes for a row of the
findings' families table also names that row's family (``findings_family``), its short name and its
kind: the table reads them from here. Later architectures plug in with the same decorator; nothing
else in the pipeline needs to change.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import numpy as np

from predcalc.data.answers import AnswerFormat
from predcalc.registry import Registry


def regression_values(model, inputs, batch_size: int = 256) -> np.ndarray:
    """Predicted values of a regression model: its single output, flattened."""
    return np.asarray(model.predict(inputs, batch_size=batch_size, verbose=0), dtype=np.float64).reshape(-1)


def identity_targets(values, tokenizer) -> np.ndarray:
    """Regression targets: the values themselves."""
    return np.asarray(values, dtype=np.float32)


@dataclasses.dataclass(frozen=True)
class Optimizer:
    """How a model trains: a recipe in ``predcalc.training.fit.OPTIMIZERS`` by name, and the peak
    learning rate of a recipe with a schedule (None: the recipe's default)."""

    name: str = "adam"
    peak_learning_rate: float | None = None


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """What the pipeline needs to know about an architecture.

    ``encode_targets(values, tokenizer)`` turns true values into what the model is fitted on
    (the values for regression; character ids for a token-output head), and
    ``predict_values(model, inputs)`` turns the model's outputs back into values; a token-output
    model names its ``answer_format`` (an :class:`predcalc.data.answers.AnswerFormat`), which
    supplies both. ``variable_length``: the model reads inputs of any length (a recurrent or scan
    model), so it can be rebuilt at a longer one (export writes such files). ``finish(model,
    x_train, y_train)``, where given, runs after fitting (on the restored best weights) and may set
    weights in closed form, e.g. a least-squares readout. ``float32_exact_below``: a model exact in
    principle at any magnitude, whose float32 files are exact while the sum of the numbers' sizes
    stays below this bound (2^24); ``predcalc predict`` refuses past it. ``learned_weights(model)``, where
    given, returns the trained weights worth reading (plain JSON: lists of numbers by name), kept in every
    seed's run record.

    The findings' families table (:mod:`predcalc.report.families`) reads four more fields:
    ``findings_family`` (the row's family this model competes for; None: no row), ``short_name``
    (the name the findings give it; None: its registry name), ``kind`` (what is learned, e.g.
    "trained" or "built form, trained units"; None: "trained", or "partly built" for a model with a
    ``finish``) and ``designed_on`` (the development data its design was chosen on, where that was
    not only validation loss).
    """

    name: str
    label: str
    family: str
    tokenizer: str
    build: Callable
    reference_row: str | None = None
    tokenizer_config: dict = dataclasses.field(default_factory=dict)
    predict_values: Callable = regression_values
    encode_targets: Callable = identity_targets
    loss: object = "mse"
    optimizer: Optimizer = Optimizer()
    finish: Callable | None = None
    answer_format: AnswerFormat | None = None
    variable_length: bool = False
    float32_exact_below: int | None = None  # |answers| a float32 file is exact for (its exports refuse past it)
    learned_weights: Callable | None = None  # model -> {name: nested lists}, kept in each run's record
    findings_family: str | None = None  # the families table's row it competes for (None: not a candidate)
    short_name: str | None = None  # the findings' name of it (None: the registry name)
    kind: str | None = None  # what is learned (None: "trained", or "partly built" with a finish)
    designed_on: str | None = None  # the development data that chose its design, beyond validation loss

    @property
    def shown_label(self) -> str:
        """The label as figures and tables show it (:func:`display_label`)."""
        return display_label(self.label, partly_built=self.finish is not None)

    @property
    def shown_kind(self) -> str:
        """The kind the findings show: ``kind``, else trained or (with a ``finish``) partly built."""
        return self.kind or ("partly built" if self.finish is not None else "trained")

    @property
    def shown_name(self) -> str:
        """The name the findings show: ``short_name``, else the registry name."""
        return self.short_name or self.name


def display_label(label: str, partly_built: bool = False) -> str:
    """A model's label as the report shows it: a model finished in closed form after fitting (a
    ``finish``) marked partly built."""
    return f"{label} (partly built)" if partly_built else label


#: Former model names (the prior report was called "seed"; issue 43), so old records and commands resolve.
RENAMED_MODELS = {
    "transformer4_seed": "transformer4_reference",  # old name (issue 43)
    "transformer5_seed": "transformer5_reference",  # old name (issue 43)
}
MODELS = Registry("model", sort_names=True, renamed=RENAMED_MODELS)


def _spec_fields(fields: dict) -> dict:
    """:class:`ModelSpec` fields as registration names them: an optimizer by its recipe's name, and
    an answer format, which supplies ``predict_values`` and ``encode_targets``."""
    fields = dict(fields)
    if isinstance(fields.get("optimizer"), str):
        fields["optimizer"] = Optimizer(fields["optimizer"])
    if "tokenizer_config" in fields:
        fields["tokenizer_config"] = dict(fields["tokenizer_config"] or {})
    if fields.get("answer_format") is not None:
        answers = fields["answer_format"]
        fields.update(predict_values=answers.predict_values, encode_targets=answers.encode_targets)
    return fields


def register_model(name: str, *, label: str, family: str, tokenizer: str, **fields):
    """Decorator: register ``build(tokenizer, **kwargs) -> keras.Model`` under ``name``.

    ``fields``: any other of :class:`ModelSpec`'s, e.g. ``answer_format`` (a token-output model's
    answer slots: its targets and decoding) or ``optimizer`` (a recipe name or an
    :class:`Optimizer` with its peak rate).
    """

    def decorate(build):
        spec = ModelSpec(name, label, family, tokenizer, build, **_spec_fields(fields))
        MODELS.add(name, spec)
        return build

    return decorate


def register_preset(name: str, base: str, *, label: str, arguments: dict, **fields) -> ModelSpec:
    """Register a variant of the registered model ``base``: its builder with ``arguments`` preset
    (a caller's own keyword arguments still win), its spec with ``fields`` changed (``label`` and
    any of :class:`ModelSpec`'s, e.g. ``optimizer``). The findings' fields (:data:`OWN_FIELDS`) are
    the variant's own: not taken from ``base``."""
    spec = get_spec(base)
    build = functools.partial(spec.build, **arguments)
    own = {field: fields.pop(field, None) for field in OWN_FIELDS}
    fields = _spec_fields(fields)
    return MODELS.add(name, dataclasses.replace(spec, name=name, label=label, build=build, **own, **fields))


#: The fields a preset does not inherit from its base: where the findings show it and as what.
OWN_FIELDS = ("findings_family", "short_name", "kind", "designed_on")


def get_spec(name: str) -> ModelSpec:
    return MODELS.named(name)
