"""Ablations of the calculator: each swaps one design choice and keeps everything else.

- ``pick``: the controller is trained on the reference evaluator's single next reduction (softmax
  over the tokens of the expression) instead of readiness labels for every token. Same pairwise
  window scorer, same training expressions; at inference it reduces its top-scoring token.
- ``continuous_state``: addition/subtraction by a GRU whose continuous hidden state carries
  between digits, trained on the same step targets (each digit and each carry), instead of a
  discrete carry fed back by the loop.
- ``answers_only``: the same GRU trained on the result digits only (no carry targets): the
  supervision a model gets from final answers.
- ``uniform``: step networks trained on the same number of expressions with uniformly random
  digits, without the coverage check and its digit-biased and repeated-operand top-ups.
"""

from __future__ import annotations

import numpy as np

from predcalc.calculator.nets import PairwiseWindowScore
from predcalc.calculator.reference import ready_labels
from predcalc.calculator.steps import STEPS
from predcalc.calculator.tokens import N_KINDS, NUM, windows

try:
    import keras
except ImportError:  # pragma: no cover
    keras = None


# ------------------------------------------------------------------ pick control
def pick_sequences(sequences) -> tuple[list[np.ndarray], list[int]]:
    """Kind sequences met when the reference reduces one token at a time (its leftmost-innermost pick),
    from the starting sequences of ``sequences``, with the pick of each."""
    states, picks, seen = [], [], set()
    for kinds in sequences:
        kinds = list(int(k) for k in kinds)
        while len(kinds) > 1:
            key = tuple(kinds)
            ready = np.flatnonzero(ready_labels(kinds))
            pick = int(ready[0])
            if key not in seen:
                seen.add(key)
                states.append(np.array(kinds))
                picks.append(pick)
            if kinds[pick] == 6:  # '(' n ')'
                kinds[pick : pick + 3] = [NUM]
            else:
                kinds[pick - 1 : pick + 2] = [NUM]
    return states, picks


def train_pick(sequences, seed: int, epochs: int = 300) -> keras.Model:
    """The pairwise window scorer trained with a softmax over each sequence's tokens on the reference pick."""

    states, picks = pick_sequences(sequences)
    length = max(len(s) for s in states)
    x = np.zeros((len(states), length, 5), np.int32)
    mask = np.zeros((len(states), length), np.float32)
    for i, kinds in enumerate(states):
        x[i, : len(kinds)] = windows(kinds)
        mask[i, : len(kinds)] = 1
    keras.utils.set_random_seed(seed)
    tokens = keras.Input((None, 5), dtype="int32", name="windows")
    valid = keras.Input((None,), name="mask")
    score = PairwiseWindowScore(N_KINDS, name="pairwise")(tokens)[..., 0]  # one output: the pick's score
    logits = score + (valid - 1.0) * 1e9
    model = keras.Model([tokens, valid], logits)
    model.compile(
        optimizer=keras.optimizers.Adam(0.05), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    model.fit([x, mask], np.array(picks), batch_size=128, epochs=epochs, verbose=0)
    return model


def pick_controller(model):
    """``list of kind arrays -> top-scoring token of each`` from a trained pick scorer (NumPy)."""
    pairs, bias = [np.asarray(w) for w in model.get_weights()]

    def pick(sequences):
        out = []
        for kinds in sequences:
            w = windows(np.asarray(kinds))
            centre = w[:, 2]
            score = bias[centre] + sum(pairs[slot][centre * N_KINDS + w[:, k]] for slot, k in enumerate((0, 1, 3, 4)))
            out.append(int(np.argmax(score)))
        return out

    return pick


# ------------------------------------------------------------------ continuous-state adder
def adder_sequences(record) -> np.ndarray:
    """Every addsub chain the reference ran, as ``[n, L, 3]`` (mode, a, b), zero-padded at the top."""
    chains = record["addsub:sequences"]
    length = max(c.shape[1] for c in chains)
    out = []
    for chain in chains:
        padded = np.zeros((chain.shape[0], length, 3), np.int64)
        padded[:, : chain.shape[1]] = chain[:, :, 1:]  # drop the carry column: the model keeps its own state
        padded[:, chain.shape[1] :, 0] = chain[:, :1, 1]  # the mode holds along the padding
        out.append(padded)
    return np.unique(np.concatenate(out), axis=0)


def adder_targets(sequences: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Digits and carries of each position from the reference step with its carry fed back."""
    n, length, _ = sequences.shape
    digits = np.zeros((n, length), np.int64)
    carries = np.zeros((n, length), np.int64)
    carry = np.zeros(n, np.int64)
    for i in range(length):
        out = STEPS["addsub"].reference(
            np.stack([carry, sequences[:, i, 0], sequences[:, i, 1], sequences[:, i, 2]], axis=1)
        )
        digits[:, i], carry = out[:, 0], out[:, 1]
        carries[:, i] = carry
    return digits, carries


def train_gru_adder(
    sequences: np.ndarray, seed: int, carry_targets: bool, units: int = 32, epochs: int = 60, limit: int = 3000
) -> keras.Model:
    """A GRU over (mode, a, b) one-hot per digit writing each result digit (and each carry, if asked),
    fitted on at most ``limit`` of the training chains (a seeded sample)."""
    if len(sequences) > limit:
        sequences = sequences[np.random.default_rng(seed).choice(len(sequences), limit, replace=False)]
    digits, carries = adder_targets(sequences)
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((None, 3), dtype="int32", name="digits")
    x = keras.ops.concatenate(
        [
            keras.ops.one_hot(inputs[..., 0], 2),
            keras.ops.one_hot(inputs[..., 1], 10),
            keras.ops.one_hot(inputs[..., 2], 10),
        ],
        axis=-1,
    )
    h = keras.layers.GRU(units, return_sequences=True, name="gru")(x)
    digit = keras.layers.Dense(10, name="digit")(h)
    carry = keras.layers.Dense(2, name="carry")(h)
    model = keras.Model(inputs, [digit, carry], name="gru_adder")
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2), loss=[loss, loss], loss_weights=[1.0, 1.0 if carry_targets else 0.0]
    )
    model.fit(sequences.astype(np.int32), [digits, carries], batch_size=128, epochs=epochs, verbose=0)
    return model


def gru_addsub(model):
    """An ``addsub`` replacement for :class:`~predcalc.calculator.engine.Engine`: digits from the GRU,
    run in NumPy from its weights (Keras' GRU with ``reset_after``: gates ordered z, r, h)."""
    kernel, recurrent, bias = [np.asarray(w) for w in model.get_layer("gru").get_weights()]
    readout, readout_bias = [np.asarray(w) for w in model.get_layer("digit").get_weights()]
    units = recurrent.shape[0]
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731

    def run(a: np.ndarray, b: np.ndarray, mode: np.ndarray) -> np.ndarray:
        n, width = a.shape
        x = (
            np.concatenate(
                [np.eye(2)[np.broadcast_to(np.asarray(mode)[:, None], a.shape)], np.eye(10)[a], np.eye(10)[b]], axis=-1
            )
            @ kernel
            + bias[0]
        )
        h = np.zeros((n, units))
        digits = np.zeros((n, width), np.int64)
        for t in range(width):
            inner = h @ recurrent + bias[1]
            z = sigmoid(x[:, t, :units] + inner[:, :units])
            r = sigmoid(x[:, t, units : 2 * units] + inner[:, units : 2 * units])
            candidate = np.tanh(x[:, t, 2 * units :] + r * inner[:, 2 * units :])
            h = z * h + (1 - z) * candidate
            digits[:, t] = np.argmax(h @ readout + readout_bias, axis=-1)
        return digits

    return run
