"""SignedSumScan: a scan whose gates read the token type, trained to carry a sign exactly.

The value of ``a op b op c ...`` is a signed sum. This layer holds a state that a token may
overwrite (update gate ``z_t``) and sums the state times each token's value:

    z_t = H(u_t W_z + c_z)                      (update gate; u_t: the token's type one-hot)
    h_t = u_t W_h                                (candidate, no bias by default)
    s_t = (1 - z_t) * s_{t-1} + z_t * h_t        (s_0: a learned initial state)
    y   = sum_t v_t * (s_t . r)                  (v_t: the token's value; r: the readout)

Every weight (``W_z``, ``W_h``, ``s_0``, ``r``) is learned; the gate offset ``c_z`` is learned only
with ``learn_offset=True`` (the shipped recipe keeps it at the constant -1). What makes the learned
function exact at any magnitude and length is in how it trains, each element a constructor argument so an
ablation can switch it off:

- ``straight_through``: the gate is hard in the forward pass, ``H(a) = round(sigmoid(a))``, 0 or 1
  exactly, and its gradient is the sigmoid's (a straight-through estimator, Bengio et al. 2013);
  False: a soft sigmoid gate.
- ``closed_init``: the gate starts closed: small logits (``W_z`` uniform in +-``gate_init_scale``)
  and a negative offset (``c_z`` starts at ``gate_offset``); False: Glorot logits, offset 0.
- ``clamp``: ``W_h``, ``s_0`` and ``r`` are clamped to [-``clamp_limit``, ``clamp_limit``] after
  every update (NAU, Madsen and Johansen 2020); the default limit 1 is the size of the solution's
  weights (a design choice an ablation widens).
- ``regularization``: the loss adds ``regularization * ramp * mean(min(|W|, 1 - |W|))`` over the
  clamped weights, which pulls each to -1, 0 or 1; ``ramp`` rises linearly from 0 at training
  step ``ramp_start`` to 1 at ``ramp_end`` (the layer counts its training calls).
- ``candidate_bias``: a bias on ``h_t`` (redundant for one-hot types).
- ``soft_write_gradient``: with straight-through gates, the write ``z_t h_t`` passes the
  candidate the soft gate's gradient (the forward stays hard), so a candidate learns while its gate
  is closed.
- ``learn_offset``: the gate's offset ``c_z`` is learned (False: it stays at ``gate_offset``, a
  constant of the architecture, and the gates move only through ``W_z``).

The layer reads any number of steps: with a known time axis it unrolls, with an unknown one
(an export with a dynamic length) it loops. Padding (all features 0) adds nothing while the gate
stays closed on it. The layer computes in its dtype policy (``dtype="float64"`` to train in
float64).

Call arguments:
    inputs: ``(batch, steps, 1 + types)``: the value, then the type one-hot.

Returns:
    ``(batch, 1)``.

Example:
    >>> layer = SignedSumScan()
    >>> tuple(layer(keras.ops.ones((2, 5, 4))).shape)
    (2, 1)
"""

import keras
from keras import ops

from predcalc.layers._common import check_bools, finite_number, positive_int, sequence_input_dim
from predcalc.layers._rounding import Clamp, add_ramped_penalty, add_step_counter, checked_ramp, rounding_penalty


@keras.saving.register_keras_serializable(package="predcalc")
class SignedSumScan(keras.layers.Layer):
    """A type-gated sign scan with a signed-sum readout; see the module docstring for the equations
    and the arguments (``units``: state size)."""

    def __init__(
        self,
        units=1,
        straight_through=True,
        closed_init=True,
        gate_offset=-1.0,
        gate_init_scale=0.1,
        clamp=True,
        clamp_limit=1.0,
        regularization=0.1,
        ramp_start=2000,
        ramp_end=5000,
        candidate_bias=False,
        learn_offset=True,
        soft_write_gradient=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = positive_int("units", units)
        check_bools(
            straight_through=straight_through, closed_init=closed_init, clamp=clamp, candidate_bias=candidate_bias
        )
        self.straight_through, self.closed_init, self.clamp = straight_through, closed_init, clamp
        self.candidate_bias = candidate_bias
        check_bools(learn_offset=learn_offset, soft_write_gradient=soft_write_gradient)
        self.learn_offset, self.soft_write_gradient = learn_offset, soft_write_gradient
        self.gate_offset = finite_number("gate_offset", gate_offset)
        self.clamp_limit = finite_number("clamp_limit", clamp_limit)
        if self.clamp_limit <= 0:
            raise ValueError(f"clamp_limit must be > 0. Received: clamp_limit={clamp_limit}")
        self.gate_init_scale = finite_number("gate_init_scale", gate_init_scale)
        self.regularization, self.ramp_start, self.ramp_end = checked_ramp(regularization, ramp_start, ramp_end)

    def build(self, input_shape):
        types = sequence_input_dim(self, input_shape) - 1
        if types < 1:
            raise ValueError(f"SignedSumScan needs a value and at least one type feature. Received: {input_shape}")
        constraint = Clamp(self.clamp_limit) if self.clamp else None
        if self.closed_init:
            gate_init = keras.initializers.RandomUniform(-self.gate_init_scale, self.gate_init_scale)
            offset_init = keras.initializers.Constant(self.gate_offset)
        else:
            gate_init, offset_init = "glorot_uniform", "zeros"
        self.gate_kernel = self.add_weight(name="gate_kernel", shape=(types, self.units), initializer=gate_init)
        self.gate_bias = self.add_weight(
            name="gate_bias", shape=(self.units,), initializer=offset_init, trainable=self.learn_offset
        )

        # One initializer per weight: a Keras initializer draws the same values on every call, so a
        # shared one would start s_0, r and W_h's first row equal. Each draws its own seed from the
        # global one (keras.utils.set_random_seed), so a seed still fixes the start.
        def uniform():
            return keras.initializers.RandomUniform(-1.0, 1.0)

        self.candidate_kernel = self.add_weight(
            name="candidate_kernel", shape=(types, self.units), initializer=uniform(), constraint=constraint
        )
        self.candidate_bias_weight = (
            self.add_weight(name="candidate_bias", shape=(self.units,), initializer="zeros")
            if self.candidate_bias
            else None
        )
        self.initial_state = self.add_weight(
            name="initial_state", shape=(self.units,), initializer=uniform(), constraint=constraint
        )
        self.readout = self.add_weight(
            name="readout", shape=(self.units,), initializer=uniform(), constraint=constraint
        )
        self.training_steps = add_step_counter(self)

    def rounded_weights(self):
        """The weights the regulariser pulls to -1, 0 or 1."""
        return [self.candidate_kernel, self.initial_state, self.readout]

    def penalty(self):
        """``mean(min(|W|, 1 - |W|))`` over :meth:`rounded_weights` (0 exactly at -1, 0 and 1)."""
        return rounding_penalty(self.rounded_weights())

    def gates(self, types):
        """The update gates ``(batch, steps, units)``: hard 0/1 forward with the sigmoid's gradient
        (``straight_through``), else the sigmoid."""
        soft = ops.sigmoid(ops.matmul(types, self.gate_kernel) + self.gate_bias)
        if not self.straight_through:
            return soft
        hard = ops.cast(soft > 0.5, soft.dtype)
        return soft + ops.stop_gradient(hard - soft)

    def states(self, inputs):
        """The states ``s_t``, ``(batch, steps, units)``."""
        values, gates, candidates = self._parts(inputs)
        steps = ops.moveaxis(1.0 - gates, 1, 0), ops.moveaxis(gates * candidates, 1, 0)
        start = ops.zeros_like(steps[0][0]) + self.initial_state

        def step(state, keep_write):
            keep, write = keep_write
            state = keep * state + write
            return state, state

        _, sequence = ops.scan(step, start, steps)
        return ops.moveaxis(sequence, 0, 1)

    def _parts(self, inputs):
        inputs = ops.cast(inputs, self.compute_dtype)
        values, types = inputs[..., :1], inputs[..., 1:]
        candidates = ops.matmul(types, self.candidate_kernel)
        if self.candidate_bias_weight is not None:
            candidates = candidates + self.candidate_bias_weight
        return values, self.gates(types), candidates

    def call(self, inputs, training=False):
        values, gates, candidates = self._parts(inputs)
        keep, write = 1.0 - gates, gates * candidates
        if self.soft_write_gradient and self.straight_through:  # the candidate learns while its gate is closed
            soft = ops.sigmoid(
                ops.matmul(ops.cast(inputs, self.compute_dtype)[..., 1:], self.gate_kernel) + self.gate_bias
            )
            write = soft * candidates + ops.stop_gradient(write - soft * candidates)
        state = ops.zeros_like(keep[:, 0]) + self.initial_state  # (batch, units)
        steps = inputs.shape[1]
        if steps is not None:  # a known length: unrolled
            total = ops.zeros_like(state)
            for t in range(steps):
                state = keep[:, t] * state + write[:, t]
                total = total + values[:, t] * state
        else:  # any length (an export with a dynamic time axis): one loop

            def step(t, carry):
                state, total = carry
                state = ops.take(keep, t, axis=1) * state + ops.take(write, t, axis=1)
                return state, total + ops.take(values, t, axis=1) * state

            state, total = ops.fori_loop(0, ops.shape(keep)[1], step, (state, ops.zeros_like(state)))
        output = ops.sum(total * self.readout, axis=-1, keepdims=True)
        add_ramped_penalty(self, self.rounded_weights(), training)
        return output

    def compute_output_shape(self, input_shape):
        return (input_shape[0], 1)

    def get_config(self):
        config = super().get_config()
        config.update(
            units=self.units,
            straight_through=self.straight_through,
            closed_init=self.closed_init,
            gate_offset=self.gate_offset,
            gate_init_scale=self.gate_init_scale,
            clamp=self.clamp,
            clamp_limit=self.clamp_limit,
            regularization=self.regularization,
            ramp_start=self.ramp_start,
            ramp_end=self.ramp_end,
            candidate_bias=self.candidate_bias,
            learn_offset=self.learn_offset,
            soft_write_gradient=self.soft_write_gradient,
        )
        return config
