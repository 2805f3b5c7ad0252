"""The contract of every public layer in `predcalc.layers`, one table row per layer (per path,
for a layer with a parallel and a step path): config round trip, a `.keras` file that reloads to
identical outputs, a training step, and clear errors for bad arguments and input shapes (see
`layer_helpers`). The Makefile runs this folder on TensorFlow, JAX and PyTorch. Each layer's own
file keeps its numbers: NumPy references, pinned values, parallel against step."""

import keras
import numpy as np
import pytest
from layer_helpers import (
    LayerCase,
    check_bad_argument,
    check_bad_shape,
    check_config_round_trip,
    check_keras_file_reload,
    check_training_step,
)

import predcalc.layers
from predcalc.layers import (
    MLSTM,
    SLSTM,
    AdditiveAttentionPooling,
    AlignedColumnGRU,
    BidirectionalLSTMAttention,
    ClsToken,
    DigitDecoder,
    DigitReadout,
    FeatureSlice,
    GatedValueSum,
    LocalTokenFeatures,
    Mamba,
    MinGRU,
    MinLSTM,
    NeuralAdditionUnit,
    NeuralMultiplicationUnit,
    PReLURNNCell,
    ReferenceGRUCell,
    ReferenceLSTMCell,
    RoundedGatedValueSum,
    SignedSumScan,
    SinusoidalPositionalEncoding,
    TransformerEncoderBlock,
)
from predcalc.layers._common import positive_int, positive_ints

SEQUENCE = (5, 4)  # (time, features) of one example
RANK_TWO = (((2, 4), "expects inputs of shape"),)  # a missing time axis

UNITS_ERRORS = (
    ({"units": 0}, "units must be a positive integer. Received: units=0"),
    ({"units": -3}, "Received: units=-3"),
    ({"units": 2.5}, "Received: units=2.5"),
    ({"units": True}, "Received: units=True"),
)


def _min_rnn_case(layer, parallel):
    return LayerCase(
        layer,
        dict(
            units=4,
            return_sequences=True,
            return_state=not parallel,
            parallel=parallel,
            use_bias=False,
            kernel_initializer="random_normal",
        ),
        SEQUENCE,
        bad_arguments=UNITS_ERRORS
        + (
            ({"units": 4, "parallel": "yes"}, "parallel must be a bool"),
            ({"units": 4, "return_sequences": 1}, "return_sequences must be a bool"),
            ({"units": 4, "return_state": None}, "return_state must be a bool"),
        ),
        bad_shapes=RANK_TWO,
        name=f"{layer.__name__}-{'parallel' if parallel else 'steps'}",
    )


def _xlstm_errors(forget_gate_error):
    return UNITS_ERRORS + (
        ({"units": 4, "num_heads": -1}, "num_heads must be a positive integer"),
        ({"units": 6, "num_heads": 4}, "units must be divisible by num_heads"),
        ({"units": 4, "forget_gate": forget_gate_error}, "forget_gate must be one of"),
        ({"units": 4, "return_state": "no"}, "return_state must be a bool"),
    )


CASES = [
    LayerCase(
        AdditiveAttentionPooling,
        dict(units=3, context_initializer="random_normal"),
        SEQUENCE,
        bad_arguments=tuple(({"units": units}, f"Received: units={units}") for units in (0, -4, 2.5, "8")),
        bad_shapes=RANK_TWO,
    ),
    LayerCase(
        AlignedColumnGRU,
        dict(units=3),
        (5, 6),
        train_every_output=True,  # the digits and the sign read heads of their own
        bad_arguments=UNITS_ERRORS,
        bad_shapes=(((2, 4), r"expects \(batch, columns, features\)"),),
    ),
    LayerCase(
        BidirectionalLSTMAttention,
        dict(units=3, attention_units=5, dropout=0.1, seed=3),
        SEQUENCE,
        bad_arguments=(
            ({"units": 0}, "Received: units=0"),
            ({"units": 2.5}, "Received: units=2.5"),
            ({"units": 4, "attention_units": 0}, "Received: attention_units=0"),
            ({"units": 4, "dropout": 1.0}, "Received: dropout=1.0"),
            ({"units": 4, "recurrent_dropout": -0.1}, "Received: recurrent_dropout=-0.1"),
        ),
        bad_shapes=RANK_TWO,
    ),
    LayerCase(
        ClsToken,
        dict(value=-2.0),
        SEQUENCE,
        bad_arguments=(
            ({"value": "15"}, "value must be a finite number"),
            ({"value": True}, "Received: value=True"),
            ({"value": float("nan")}, "Received: value=nan"),
        ),
    ),
    LayerCase(
        DigitDecoder,
        dict(vocabulary=15, dim=8, heads=2, depth=2, id_pairs=1, intermediate=12),
        [(5,), (5,), (5,)],  # tokens, ids, levels
        integers=(15, 9, 5),
        bad_arguments=(
            ({"vocabulary": 0}, "vocabulary must be a positive integer. Received: vocabulary=0"),
            ({"vocabulary": 15, "dim": 2.5}, "Received: dim=2.5"),
            ({"vocabulary": 15, "heads": True}, "Received: heads=True"),
            ({"vocabulary": 15, "depth": -1}, "Received: depth=-1"),
            ({"vocabulary": 15, "dim": 8, "heads": 3}, "split into heads of an even size. Received: dim=8, heads=3"),
            ({"vocabulary": 15, "dim": 6, "heads": 2}, "split into heads of an even size"),  # heads of 3
            ({"vocabulary": 15, "dim": 8, "heads": 2, "id_pairs": 3}, r"id_pairs must lie in 1\.\.2"),
            ({"vocabulary": 15, "id_pairs": 0}, "Received: id_pairs=0"),
            ({"vocabulary": 15, "intermediate": -4}, "Received: intermediate=-4"),
        ),
        bad_shapes=(
            ([(2, 5, 3), (2, 5), (2, 5)], r"of shape \(batch, length\)"),
            ([(2, 5), (2, 5)], r"expects \[tokens, ids, levels\]"),
            ((2, 5), r"expects \[tokens, ids, levels\]"),  # the tokens alone
            ([(2, 5), (2, 4), (2, 5)], "one length"),
        ),
    ),
    LayerCase(
        DigitDecoder,
        dict(vocabulary=15, dim=8, heads=2, depth=1, intermediate=12, id_table=10, level_table=5, id_floor=0),
        [(5,), (5,), (5,)],  # tokens, ids (0..8: rows 0..8 of the id table), levels
        integers=(15, 9, 5),
        bad_arguments=(
            ({"vocabulary": 15, "id_table": 0, "level_table": 4}, "Received: id_table=0"),
            ({"vocabulary": 15, "id_table": 8}, "give both id_table and level_table, or neither"),
            ({"vocabulary": 15, "id_floor": 0.5}, "id_floor must be an integer. Received: id_floor=0.5"),
        ),
        name="DigitDecoder-learned-ids",
    ),
    LayerCase(
        DigitReadout,
        dict(slots=3, num_heads=2, ffn_units=5, dropout=0.1, activation="gelu"),
        (6, 4),
        bad_arguments=(
            ({"slots": 0, "num_heads": 2, "ffn_units": 4}, "Received: slots=0"),
            ({"slots": 3, "num_heads": 0, "ffn_units": 4}, "Received: num_heads=0"),
            ({"slots": 3, "num_heads": 2, "ffn_units": 4, "dropout": -0.1}, "Received: dropout=-0.1"),
        ),
        bad_shapes=(((2, 4), r"\(batch, time, d_model\)"), ((2, 6, 5), "divisible by num_heads")),
    ),
    LayerCase(
        FeatureSlice,
        dict(start=1, stop=3),
        SEQUENCE,
        bad_arguments=(
            ({"start": -1, "stop": 2}, "0 <= start < stop"),
            ({"start": 2, "stop": 2}, "0 <= start < stop"),
            ({"start": 0, "stop": 1.5}, "Received: start=0, stop=1.5"),
            ({"start": False, "stop": 2}, "Received: start=False"),
        ),
        bad_shapes=(((2, 5, 2), "stop=3 is out of range"),),
    ),
    LayerCase(
        GatedValueSum,
        {},
        [SEQUENCE, (5, 1)],
        bad_shapes=(([(2, 5, 4), (2, 5, 2)], "values"), ([(2, 5, 4), (2, 4, 1)], "same steps")),
    ),
    LayerCase(
        RoundedGatedValueSum,
        dict(use_bias=True),
        [SEQUENCE, (5, 1)],
        bad_arguments=(({"use_bias": "yes"}, "use_bias must be a bool"),),
        bad_shapes=(([(2, 5, 4), (2, 5, 2)], "values"),),
    ),
    LayerCase(
        SignedSumScan,
        dict(units=2, straight_through=False, closed_init=False, regularization=0.05, candidate_bias=True),
        SEQUENCE,
        bad_arguments=UNITS_ERRORS
        + (
            ({"straight_through": 1}, "straight_through must be a bool"),
            ({"regularization": -1.0}, "regularization must be >= 0"),
            ({"ramp_start": 5, "ramp_end": 2}, "ramp_start <= ramp_end"),
            ({"gate_offset": "low"}, "gate_offset must be a finite number"),
        ),
        bad_shapes=RANK_TWO + (((2, 5, 1), "at least one type feature"),),
    ),
    LayerCase(
        LocalTokenFeatures,
        dict(fill=-1.0),
        (5, 1),
        bad_arguments=(({"fill": "0.5"}, "fill must be a finite number"),),
        bad_shapes=(((2, 3, 2), r"\(batch, steps, 1\)"),),
    ),
    *(
        LayerCase(
            MLSTM,
            dict(
                units=4,
                num_heads=2,
                forget_gate="exp",
                return_sequences=True,
                return_state=not parallel,
                parallel=parallel,
                stabilized=stabilized,
            ),
            SEQUENCE,
            bad_arguments=_xlstm_errors("relu") + (({"units": 4, "parallel": 0}, "parallel must be a bool"),),
            bad_shapes=RANK_TWO,
            name=f"MLSTM-{'parallel' if parallel else 'steps'}{'-stabilized' if stabilized else ''}",
        )
        for parallel, stabilized in ((True, False), (False, False), (True, True))
    ),
    *(
        LayerCase(
            Mamba,
            dict(
                units=4,
                state_size=3,
                expand=2,
                conv_kernel_size=2,
                dt_rank=2,
                return_sequences=True,
                return_state=not parallel,
                parallel=parallel,
                bounded_state=bounded,
            ),
            SEQUENCE,
            bad_arguments=UNITS_ERRORS
            + (
                ({"units": 4, "state_size": 0}, "state_size must be a positive integer"),
                ({"units": 4, "expand": 1.5}, "expand must be a positive integer"),
                ({"units": 4, "conv_kernel_size": -1}, "conv_kernel_size must be a non-negative"),
                ({"units": 4, "dt_rank": "full"}, 'dt_rank must be a positive integer or "auto"'),
                ({"units": 4, "parallel": None}, "parallel must be a bool"),
            ),
            bad_shapes=RANK_TWO,
            name=f"Mamba-{'parallel' if parallel else 'steps'}{'-bounded' if bounded else ''}",
        )
        for parallel, bounded in ((True, False), (False, False), (True, True))
    ),
    *(_min_rnn_case(layer, parallel) for layer in (MinGRU, MinLSTM) for parallel in (True, False)),
    *(
        LayerCase(
            layer,
            dict(units=3, regularization=0.05, ramp_start=0, ramp_end=2),
            SEQUENCE,
            bad_arguments=UNITS_ERRORS
            + (
                ({"units": 2, "regularization": -1.0}, "regularization must be >= 0"),
                ({"units": 2, "regularization": "high"}, "regularization must be a finite number"),
                ({"units": 2, "ramp_start": 5, "ramp_end": 2}, "ramp_start <= ramp_end"),
            ),
            bad_shapes=(((4,), r"expects inputs of shape \(\.\.\., features\)"),),
        )
        for layer in (NeuralAdditionUnit, NeuralMultiplicationUnit)
    ),
    LayerCase(
        PReLURNNCell,
        dict(units=3, kernel_initializer="random_uniform", alpha_initializer=keras.initializers.Constant(0.1)),
        SEQUENCE,
        cell=True,
        bad_arguments=tuple(({"units": units}, f"Received: units={units}") for units in (0, -3, 2.5, None, True)),
    ),
    LayerCase(
        SLSTM,
        dict(
            units=4,
            num_heads=2,
            forget_gate="exp",
            return_sequences=True,
            return_state=True,
            recurrent_initializer="glorot_uniform",
        ),
        SEQUENCE,
        bad_arguments=_xlstm_errors("tanh"),
        bad_shapes=RANK_TWO,
    ),
    LayerCase(
        ReferenceGRUCell,
        dict(units=3, bias_initializer="ones"),
        SEQUENCE,
        cell=True,
        bad_arguments=tuple(({"units": units}, f"Received: units={units}") for units in (0, -2, 3.0, None)),
    ),
    LayerCase(
        ReferenceLSTMCell,
        dict(units=3, kernel_initializer="orthogonal", unit_forget_bias=False),
        SEQUENCE,
        cell=True,
        bad_arguments=tuple(({"units": units}, f"Received: units={units}") for units in (0, -1, 1.5, None)),
    ),
    LayerCase(
        SinusoidalPositionalEncoding,
        dict(max_wavelength=100.0),
        SEQUENCE,
        bad_arguments=tuple(
            ({"max_wavelength": value}, "Received: max_wavelength=") for value in (0, -1.0, "10000", True)
        ),
        bad_shapes=(((2, 4), r"\(batch, time, features\)"),),
    ),
    LayerCase(
        TransformerEncoderBlock,
        dict(num_heads=2, ffn_units=6, dropout=0.1, activation="gelu", layer_norm_epsilon=1e-3),
        SEQUENCE,
        bad_arguments=(
            ({"num_heads": 0, "ffn_units": 4}, "Received: num_heads=0"),
            ({"num_heads": 2, "ffn_units": -1}, "Received: ffn_units=-1"),
            ({"num_heads": 2, "ffn_units": 4, "key_dim": 0}, "Received: key_dim=0"),
            ({"num_heads": 2, "ffn_units": 4, "dropout": 1.0}, "Received: dropout=1.0"),
            ({"num_heads": 2, "ffn_units": 4, "layer_norm_epsilon": 0}, "Received: layer_norm_epsilon=0"),
        ),
        bad_shapes=(((2, 4), r"\(batch, time, d_model\)"), ((2, 5, 5), "divisible by num_heads")),
    ),
]


def _ids(cases):
    return [case.id for case in cases]


def test_every_public_layer_has_a_row():
    assert {case.layer.__name__ for case in CASES} == set(predcalc.layers.__all__)


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_config_round_trip(case):
    check_config_round_trip(case)


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_keras_file_reloads_with_identical_outputs(case, tmp_path):
    check_keras_file_reload(case, tmp_path)


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_a_training_step_moves_every_weight(case):
    check_training_step(case)


BAD_ARGUMENTS = [(case, kwargs, message) for case in CASES for kwargs, message in case.bad_arguments]
BAD_SHAPES = [(case, shape, message) for case in CASES for shape, message in case.bad_shapes]


@pytest.mark.parametrize(
    "case, kwargs, message", BAD_ARGUMENTS, ids=[f"{case.id}-{kwargs}" for case, kwargs, _ in BAD_ARGUMENTS]
)
def test_bad_argument_raises_a_clear_error(case, kwargs, message):
    check_bad_argument(case, kwargs, message)


@pytest.mark.parametrize(
    "case, shape, message", BAD_SHAPES, ids=[f"{case.id}-{shape}" for case, shape, _ in BAD_SHAPES]
)
def test_bad_input_shape_raises_a_clear_error(case, shape, message):
    check_bad_shape(case, shape, message)


@pytest.mark.parametrize("value", [3, np.int64(3), np.int32(3), np.uint8(3)])
def test_positive_int_checks_agree_on_integers_of_any_type(value):
    assert positive_int("units", value) == 3 and type(positive_int("units", value)) is int
    assert positive_ints(units=value, num_heads=value) == (3, 3)


@pytest.mark.parametrize("value", [True, np.bool_(True), 0, np.int64(-2), 2.0, np.float64(2.0), "3", None])
def test_positive_int_checks_agree_on_what_they_refuse(value):
    message = f"units must be a positive integer. Received: units={value}"
    with pytest.raises(ValueError, match=message):
        positive_int("units", value)
    with pytest.raises(ValueError, match=message):
        positive_ints(units=value)
