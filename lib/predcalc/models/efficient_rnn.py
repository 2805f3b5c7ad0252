"""Efficient gated recurrent networks of seed 003 on the prior report's numeric tokens.

Every model reads the prior report's numeric tokens (``NumericTokenizer``: numbers as floats, ``+``
1.0, ``-`` 0.0, pad 0.5), treats them as a sequence of 15 scalars, projects each scalar to a
vector with a ReLU ``Dense`` layer (the "embedding"; ``embedding=0`` skips it), runs the
recurrent layer(s) and reads the last output with one linear output neuron:

    tokens (batch, 15) -> Reshape (15, 1) -> Dense(embedding, relu) -> layer(s) -> Dense(1)

The embedding is non-linear on purpose: every layer here starts with a linear projection of
``x_t``, so a linear embedding would add parameters and nothing else (a rank-1 map of a scalar),
and the LiteRT converter folds the two matmuls into one with a wrong input size ("'tfl.fully_connected'
op expect 'input' num_elements % 64 == 0"), which fails every LiteRT format.

- ``min_gru`` / ``min_lstm``: two stacked minGRU / minLSTM layers (Feng et al. 2024). Their
  gates read only ``x_t``, so one layer cannot tell the operator ``+`` (1.0) from the number
  1 by position; the second layer's gates read the first layer's states, which can.
- ``slstm``: one sLSTM layer (xLSTM, exponential input gate, block-diagonal recurrence over
  heads); its gates read ``h_{t-1}`` as an LSTM's do.
- ``mlstm``: two stacked mLSTM layers (xLSTM matrix memory, parallel quadratic form).
- ``mamba``: two stacked Mamba blocks (selective SSM with a causal convolution).
"""

from __future__ import annotations

import keras

from predcalc.layers import MLSTM, SLSTM, Mamba, MinGRU, MinLSTM
from predcalc.models.registry import register_model, register_preset

FAMILY = "efficient RNN"
# the families table's rows
MIN_RNN, XLSTM, MAMBA = "minGRU / minLSTM", "xLSTM (sLSTM, mLSTM)", "Mamba"


def sequence_model(tokenizer, make_layers, embedding: int, name: str) -> keras.Model:
    """Numeric tokens as a sequence of scalars, an optional ReLU Dense embedding, ``make_layers()`` in
    order (all but the last returning sequences), and one linear output neuron."""
    if embedding < 0:
        raise ValueError(f"embedding must be non-negative (0: no embedding). Received: embedding={embedding}")
    inputs = keras.Input((tokenizer.length,), name="tokens")
    x = keras.layers.Reshape((tokenizer.length, 1), name="token_sequence")(inputs)
    if embedding:
        x = keras.layers.Dense(embedding, activation="relu", name="embedding")(x)
    for layer in make_layers():
        x = layer(x)
    outputs = keras.layers.Dense(1, name="value")(x)
    return keras.Model(inputs, outputs, name=name)


def stacked_model(
    tokenizer, layer_class, prefix: str, units: int, layers: int, embedding: int, name: str, **layer_arguments
) -> keras.Model:
    """:func:`sequence_model` over ``layers`` stacked ``layer_class(units, **layer_arguments)`` layers
    named ``PREFIX_1``, ``PREFIX_2``, ...: only the last returns one state."""
    if layers < 1:
        raise ValueError(f"layers must be at least 1. Received: layers={layers}")
    return sequence_model(
        tokenizer,
        lambda: [
            layer_class(units, return_sequences=index < layers - 1, name=f"{prefix}_{index + 1}", **layer_arguments)
            for index in range(layers)
        ],
        embedding,
        name=name,
    )


@register_model(
    "min_gru",
    label="MinGRU (2 x 64)",
    family=FAMILY,
    variable_length=True,
    tokenizer="numeric",
    findings_family=MIN_RNN,
    short_name="minGRU",
)
def min_gru(tokenizer, units: int = 64, layers: int = 2, embedding: int = 64, parallel: bool = True) -> keras.Model:
    """Stacked minGRU layers (16,833 parameters with the defaults)."""
    return stacked_model(tokenizer, MinGRU, "min_gru", units, layers, embedding, "min_gru", parallel=parallel)


@register_model(
    "min_lstm",
    label="MinLSTM (2 x 64)",
    family=FAMILY,
    variable_length=True,
    tokenizer="numeric",
    findings_family=MIN_RNN,
    short_name="minLSTM",
)
def min_lstm(tokenizer, units: int = 64, layers: int = 2, embedding: int = 64, parallel: bool = True) -> keras.Model:
    """Stacked minLSTM layers (25,153 parameters with the defaults)."""
    return stacked_model(tokenizer, MinLSTM, "min_lstm", units, layers, embedding, "min_lstm", parallel=parallel)


@register_model(
    "slstm",
    label="sLSTM (64, 4 heads)",
    family=FAMILY,
    variable_length=True,
    tokenizer="numeric",
    findings_family=XLSTM,
    short_name="sLSTM",
)
def slstm(
    tokenizer, units: int = 64, num_heads: int = 4, forget_gate: str = "sigmoid", layers: int = 1, embedding: int = 64
) -> keras.Model:
    """sLSTM with exponential input gate and a block-diagonal recurrence (20,929 parameters)."""
    return stacked_model(
        tokenizer, SLSTM, "slstm", units, layers, embedding, "slstm", num_heads=num_heads, forget_gate=forget_gate
    )


@register_model(
    "mlstm",
    label="mLSTM (2 x 64, 4 heads)",
    family=FAMILY,
    variable_length=True,
    tokenizer="numeric",
    findings_family=XLSTM,
    short_name="mLSTM",
)
def mlstm(
    tokenizer,
    units: int = 64,
    num_heads: int = 4,
    forget_gate: str = "sigmoid",
    layers: int = 2,
    embedding: int = 64,
    parallel: bool = True,
    stabilized: bool = False,
    name: str = "mlstm",
) -> keras.Model:
    """Stacked mLSTM layers, parallel quadratic form (34,513 parameters with the defaults)."""
    heads = {"num_heads": num_heads, "forget_gate": forget_gate, "stabilized": stabilized}
    return stacked_model(tokenizer, MLSTM, "mlstm", units, layers, embedding, name, parallel=parallel, **heads)


# ``mlstm`` with ``stabilized=True``: xLSTM gate-bias init and per-head norm (same parameters).
register_preset(
    "mlstm_stable",
    "mlstm",
    label="mLSTM, xLSTM stabilisers",
    arguments={"stabilized": True, "name": "mlstm_stable"},
    findings_family=XLSTM,
    short_name="mLSTM, stabilised",
)


@register_model(
    "mamba",
    label="Mamba (2 x 32, N 16)",
    family=FAMILY,
    variable_length=True,
    tokenizer="numeric",
    findings_family=MAMBA,
    short_name="Mamba",
)
def mamba(
    tokenizer,
    units: int = 32,
    state_size: int = 16,
    expand: int = 2,
    conv_kernel_size: int = 4,
    layers: int = 2,
    embedding: int = 32,
    parallel: bool = True,
    bounded_state: bool = False,
    name: str = "mamba",
) -> keras.Model:
    """Stacked Mamba blocks: selective SSM, causal convolution, gate (19,937 parameters with the defaults)."""
    ssm = {"state_size": state_size, "expand": expand, "conv_kernel_size": conv_kernel_size}
    return stacked_model(
        tokenizer, Mamba, "mamba", units, layers, embedding, name, parallel=parallel, bounded_state=bounded_state, **ssm
    )


# ``mamba`` with ``bounded_state=True``: exact ZOH and RMS-normalised B, C (same parameters).
register_preset(
    "mamba_bounded",
    "mamba",
    label="Mamba, bounded state (2 x 32, N 16)",
    arguments={"bounded_state": True, "name": "mamba_bounded"},
    findings_family=MAMBA,
    short_name="Mamba, bounded state",
)
