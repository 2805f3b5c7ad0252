"""Keras layers of the predictive calculator, one public class per module.

Every layer uses only `keras.ops` in `call`, so it runs on the TensorFlow, JAX and PyTorch
backends, and is registered for `.keras` save/load under the package name `predcalc`.
Each module's public class is imported here, so `from predcalc.layers import MinGRU` works
and loading a `.keras` file finds every layer.
"""

import importlib
import inspect
import pkgutil

import keras

__all__ = []
for _module_info in pkgutil.iter_modules(__path__):
    _module = importlib.import_module(f"{__name__}.{_module_info.name}")
    for _name, _value in vars(_module).items():
        if (
            inspect.isclass(_value)
            and _value.__module__ == _module.__name__
            and not _name.startswith("_")
            and not _module_info.name.startswith("_")
            and issubclass(_value, keras.layers.Layer)
        ):
            globals()[_name] = _value
            __all__.append(_name)
# A base class the library's layers share (e.g. InputGatedScan under MinGRU and MinLSTM) is plumbing, not a
# layer; a layer that one other layer extends (GatedValueSum under RoundedGatedValueSum) stays a layer.
__all__ = sorted(
    name
    for name in __all__
    if sum(other != name and issubclass(globals()[other], globals()[name]) for other in __all__) < 2
)
