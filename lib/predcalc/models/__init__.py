"""Architectures by name. Importing this package registers every model.

Each module of this package registers its models with :func:`register_model`; the modules
are imported here automatically, so a new architecture is one new file.
"""

import importlib
import pkgutil

from predcalc.models.registry import (
    MODELS,
    ModelSpec,
    Optimizer,
    get_spec,
    register_model,
    register_preset,
    regression_values,
)

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "registry":
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["MODELS", "ModelSpec", "Optimizer", "get_spec", "register_model", "register_preset", "regression_values"]
