"""A built model rebuilt from its config with one change, keeping its weights.

:func:`with_input_length` (a recurrent or scan model at a longer input, for longer expressions)
and :func:`unrolled` (every Keras recurrent layer unrolled, which kept an LSTM's full-integer
int8 export, measured on this machine).
"""

from __future__ import annotations


def with_input_length(model, length: int):
    """The model rebuilt for inputs of ``length`` tokens, with the same weights (or an error)."""
    old = int(model.inputs[0].shape[1])

    def swap(node):
        if isinstance(node, dict):
            return {
                k: (
                    _swap_shape(v, old, length)
                    if k in ("batch_shape", "batch_input_shape", "target_shape")
                    else swap(v)
                )
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [swap(v) for v in node]
        return node

    resized = model.__class__.from_config(swap(model.get_config()))
    resized.set_weights(model.get_weights())
    if tuple(resized.inputs[0].shape[1:]) != (length, *model.inputs[0].shape[2:]):
        raise ValueError(f"could not resize the input to {length}")
    return resized


def _swap_shape(shape, old, new):
    if isinstance(shape, (list, tuple)):
        shape = list(shape)
        if None in shape[:1] and len(shape) > 1 and shape[1] == old:
            shape[1] = new
        elif shape and shape[0] == old:
            shape[0] = new
    return shape


def unrolled(model):
    """The model with every Keras recurrent layer unrolled (same weights), or None if it has none."""
    found = []

    def unroll(node):
        if isinstance(node, dict):
            if node.get("unroll") is False:
                found.append(True)
            return {k: (True if k == "unroll" and v is False else unroll(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [unroll(v) for v in node]
        return node

    config = unroll(model.get_config())
    if not found:
        return None
    rebuilt = model.__class__.from_config(config)
    rebuilt.set_weights(model.get_weights())
    return rebuilt


def computes_in_float64(model) -> bool:
    """Whether any layer of ``model`` computes in float64 (its dtype policy)."""
    return any(getattr(layer, "compute_dtype", None) == "float64" for layer in model.layers)


def with_float32(model):
    """The model rebuilt with every float64 dtype policy as float32, its weights cast (for a format
    without float64 kernels, e.g. LiteRT); the model itself if nothing computes in float64."""
    if not computes_in_float64(model):
        return model
    import keras  # the rebuild needs Keras; this module's other functions only take models

    def swap(node):
        if isinstance(node, dict):
            if node.get("class_name") == "DTypePolicy" and node.get("config", {}).get("name") == "float64":
                return {**node, "config": {**node["config"], "name": "float32"}}
            return {k: ("float32" if k == "dtype" and v == "float64" else swap(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [swap(v) for v in node]
        return node

    rebuilt = model.__class__.from_config(swap(model.get_config()))
    rebuilt.set_weights([keras.ops.convert_to_numpy(w).astype("float32") for w in model.weights])
    return rebuilt
