"""The shared body of MinGRU and MinLSTM: input-only gates, one linear scan.

Both layers project `x_t` once into `gate_count` blocks of `units` logits
(`[gates... | candidate]`), turn them into the coefficients of
`h_t = a_t * h_{t-1} + b_t`, and evaluate that recurrence either with the
log-space parallel scan or one step at a time. A subclass names its gate
count and supplies the two kernels of its paper equation:

- `_log_coefficients(*logits) -> (log_a, log_b)`, each `(batch, time, units)`;
- `_step(h_prev, *logits_t) -> h_t`, each `(batch, units)`.

The base class is private (its name starts with an underscore), so the layer
package exports only the two public layers.
"""

from keras import ops

from predcalc.layers._common import (
    SequenceLayer,
    check_bools,
    no_xla_on_tensorflow,
    positive_int,
    sequence_input_dim,
    set_initializers,
)
from predcalc.layers.scan_kernels import log_space_last_state, log_space_scan, run_steps


class InputGatedScan(SequenceLayer):
    """Base of the minimal RNNs; see `MinGRU` and `MinLSTM` for the arguments."""

    gate_count = None  # blocks of `units` logits per step, the candidate included
    config_names = ("units", "return_sequences", "return_state", "parallel", "use_bias")
    config_initializers = ("kernel_initializer", "bias_initializer")

    def __init__(
        self,
        units,
        return_sequences=False,
        return_state=False,
        parallel=True,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        units = positive_int("units", units)
        check_bools(return_sequences=return_sequences, return_state=return_state, parallel=parallel, use_bias=use_bias)
        self.units = units
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.parallel = parallel
        self.use_bias = use_bias
        set_initializers(self, kernel_initializer=kernel_initializer, bias_initializer=bias_initializer)
        no_xla_on_tensorflow(self)  # neither TF path compiles under XLA (see `scan_kernels`)

    def build(self, input_shape):
        input_dim = sequence_input_dim(self, input_shape)
        self.kernel = self.add_weight(
            name="kernel",
            shape=(input_dim, self.gate_count * self.units),
            initializer=self.kernel_initializer,
        )
        if self.use_bias:
            self.bias = self.add_weight(
                name="bias",
                shape=(self.gate_count * self.units,),
                initializer=self.bias_initializer,
            )
        else:
            self.bias = None

    def _log_coefficients(self, *logits):
        raise NotImplementedError

    def _step(self, h_prev, *logits_t):
        raise NotImplementedError

    def call(self, inputs, initial_state=None):
        if isinstance(initial_state, (list, tuple)):
            (initial_state,) = initial_state
        projected = ops.matmul(inputs, self.kernel)  # (batch, time, gates*units)
        if self.bias is not None:
            projected = projected + self.bias  # (batch, time, gates*units)
        units = self.units
        logits = tuple(
            projected[..., index * units : (index + 1) * units] for index in range(self.gate_count)
        )  # gate_count x (batch, time, units)

        if self.parallel:
            log_a, log_b = self._log_coefficients(*logits)  # (batch, time, units) each
            if self.return_sequences:
                sequence, last_state = log_space_scan(
                    log_a, log_b, initial_state
                )  # (batch, time, units), (batch, units)
            else:  # only h_T is returned: one reduction, no scan
                sequence = None
                last_state = log_space_last_state(log_a, log_b, initial_state)  # (batch, units)
        else:
            sequence, last_state = self._step_path(logits, initial_state)

        output = sequence if self.return_sequences else last_state
        if self.return_state:
            return [output, last_state]
        return output

    def _step_path(self, logits, initial_state):
        step_inputs = tuple(ops.moveaxis(block, 1, 0) for block in logits)  # gate_count x (time, batch, units)
        if initial_state is None:
            initial_state = ops.zeros_like(step_inputs[0][0])  # (batch, units)

        def step(h_prev, logits_t):
            h_t = self._step(h_prev, *logits_t)  # (batch, units)
            return h_t, h_t

        last_state, sequence = run_steps(step, initial_state, step_inputs)  # (batch, units), (time, batch, units)
        return ops.moveaxis(sequence, 0, 1), last_state

    def state_shapes(self, batch_size):
        return [(batch_size, self.units)]
