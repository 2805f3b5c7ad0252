"""Architectures by name. Importing this package registers every model."""

from predcalc.models import fnn  # noqa: F401  (registers the FNNs)
from predcalc.models.registry import MODELS, ModelSpec, get_spec, register_model, regression_values

__all__ = ["MODELS", "ModelSpec", "get_spec", "register_model", "regression_values"]
