"""Tests of the scan kernels for `h_t = a_t * h_{t-1} + b_t`."""

import keras
import numpy as np
import pytest
from keras import ops

from predcalc.layers import scan_kernels


def reference_scan(a, b, h0=None):
    """NumPy step loop, float64: `h_t = a_t * h_{t-1} + b_t`."""
    a, b = np.asarray(a, "float64"), np.asarray(b, "float64")
    h = np.zeros_like(b[:, 0]) if h0 is None else np.asarray(h0, "float64")
    outputs = []
    for t in range(b.shape[1]):
        h = a[:, t] * h + b[:, t]
        outputs.append(h)
    return np.stack(outputs, axis=1)


def gates(shape, seed=0):
    """Decays `a` in (0, 1) and positive inputs `b`, with their logs."""
    rng = np.random.default_rng(seed)
    log_a = -np.logaddexp(0.0, rng.normal(size=shape))  # log(1 - sigmoid)
    log_b = rng.normal(size=shape) - 1.0
    return log_a.astype("float32"), log_b.astype("float32")


def to_numpy(x):
    return ops.convert_to_numpy(x)


def test_g_pinned_values_and_continuity():
    x = np.array([-2.0, -1.0, 0.0, 1.0, 3.0], "float32")
    expected = [1 / (1 + np.exp(2.0)), 1 / (1 + np.exp(1.0)), 0.5, 1.5, 3.5]
    np.testing.assert_allclose(to_numpy(scan_kernels.g(x)), expected, atol=1e-6)
    # Continuous at 0: sigmoid(0) = 0.5 = 0 + 0.5.
    eps = np.array([-1e-4, 1e-4], "float32")
    np.testing.assert_allclose(to_numpy(scan_kernels.g(eps)), [0.5, 0.5], atol=1e-4)


def test_log_g_is_log_of_g_and_finite_for_large_negative_inputs():
    x = np.linspace(-30.0, 30.0, 61).astype("float32")
    np.testing.assert_allclose(
        to_numpy(scan_kernels.log_g(x)),
        np.log(to_numpy(scan_kernels.g(x)).astype("float64")),
        atol=1e-5,
    )
    very_negative = np.array([-200.0], "float32")
    # log(sigmoid(-200)) = -200 (up to 1e-87), which `log(g(x))` cannot give.
    np.testing.assert_allclose(to_numpy(scan_kernels.log_g(very_negative)), [-200.0], atol=1e-4)


@pytest.mark.parametrize("with_initial_state", [False, True])
def test_log_space_scan_matches_numpy(with_initial_state):
    log_a, log_b = gates((2, 7, 3))
    # Any sign of h_0 is allowed: it enters by linearity, not through a log.
    h0 = np.array([[0.5, -1.0, 2.0], [-0.25, 0.0, 1.0]], "float32")
    h0 = h0 if with_initial_state else None
    h, h_last = scan_kernels.log_space_scan(log_a, log_b, h0)
    expected = reference_scan(np.exp(log_a), np.exp(log_b), h0)
    np.testing.assert_allclose(to_numpy(h), expected, atol=1e-5)
    np.testing.assert_allclose(to_numpy(h_last), expected[:, -1], atol=1e-5)


def test_log_space_scan_pinned_numbers():
    # a = 0.5, b = 1: h = 1, 1.5, 1.75, 1.875 from h_0 = 0.
    log_a = np.full((1, 4, 1), np.log(0.5), "float32")
    log_b = np.zeros((1, 4, 1), "float32")
    h, _ = scan_kernels.log_space_scan(log_a, log_b)
    np.testing.assert_allclose(to_numpy(h)[0, :, 0], [1.0, 1.5, 1.75, 1.875], atol=1e-6)
    # From h_0 = -2: h = 0, 1, 1.5, 1.75.
    h, _ = scan_kernels.log_space_scan(log_a, log_b, np.array([[-2.0]], "float32"))
    np.testing.assert_allclose(to_numpy(h)[0, :, 0], [0.0, 1.0, 1.5, 1.75], atol=1e-6)


@pytest.mark.parametrize("with_initial_state", [False, True])
def test_linear_and_sequential_scans_match_numpy_with_signed_inputs(
    with_initial_state,
):
    rng = np.random.default_rng(1)
    a = rng.uniform(0.0, 1.0, size=(2, 9, 2, 3)).astype("float32")
    b = rng.normal(size=(2, 9, 2, 3)).astype("float32")
    h0 = rng.normal(size=(2, 2, 3)).astype("float32") if with_initial_state else None
    expected = reference_scan(a, b, h0)
    for kernel in (scan_kernels.linear_scan, scan_kernels.sequential_scan):
        h, h_last = kernel(a, b, h0)
        np.testing.assert_allclose(to_numpy(h), expected, atol=1e-5)
        np.testing.assert_allclose(to_numpy(h_last), expected[:, -1], atol=1e-5)


def test_parallel_scans_equal_step_loop_on_a_long_sequence():
    log_a, log_b = gates((2, 128, 4), seed=2)
    a, b = np.exp(log_a), np.exp(log_b)
    h_step, _ = scan_kernels.sequential_scan(a, b)
    h_log, _ = scan_kernels.log_space_scan(log_a, log_b)
    h_linear, _ = scan_kernels.linear_scan(a, b)
    np.testing.assert_allclose(to_numpy(h_log), to_numpy(h_step), atol=1e-5)
    np.testing.assert_allclose(to_numpy(h_linear), to_numpy(h_step), atol=1e-5)


def test_splitting_a_sequence_with_carried_state_equals_whole():
    log_a, log_b = gates((2, 10, 3), seed=3)
    whole, _ = scan_kernels.log_space_scan(log_a, log_b)
    first, state = scan_kernels.log_space_scan(log_a[:, :4], log_b[:, :4])
    second, _ = scan_kernels.log_space_scan(log_a[:, 4:], log_b[:, 4:], state)
    np.testing.assert_allclose(
        np.concatenate([to_numpy(first), to_numpy(second)], axis=1),
        to_numpy(whole),
        atol=1e-6,
    )


def test_cumsum_form_is_exact_on_short_sequences():
    log_a, log_b = gates((2, 12, 3), seed=4)
    h0 = np.ones((2, 3), "float32")
    h, h_last = scan_kernels.log_space_scan_cumsum(log_a, log_b, h0)
    expected = reference_scan(np.exp(log_a), np.exp(log_b), h0)
    np.testing.assert_allclose(to_numpy(h), expected, atol=1e-5)
    np.testing.assert_allclose(to_numpy(h_last), expected[:, -1], atol=1e-5)


def test_cumsum_form_loses_early_steps_when_decay_exceeds_float32_range():
    # a = exp(-3) for 64 steps: the cumulative decay spans 192 nats, more
    # than float32's ~87, so the one-shift cumsum form underflows early steps
    # to h = 0 while the associative log-space scan stays exact. This is why
    # the layers use the associative scan.
    log_a = np.full((1, 64, 1), -3.0, "float32")
    log_b = np.zeros((1, 64, 1), "float32")
    expected = reference_scan(np.exp(log_a), np.exp(log_b))
    h_assoc, _ = scan_kernels.log_space_scan(log_a, log_b)
    h_cumsum, _ = scan_kernels.log_space_scan_cumsum(log_a, log_b)
    np.testing.assert_allclose(to_numpy(h_assoc), expected, atol=1e-5)
    assert to_numpy(h_cumsum)[0, 0, 0] == 0.0  # true value 1.0
    np.testing.assert_allclose(to_numpy(h_cumsum)[0, -1], expected[0, -1], atol=1e-5)


@pytest.mark.parametrize("with_initial_state", [False, True])
def test_last_state_reduction_matches_numpy(with_initial_state):
    log_a, log_b = gates((2, 7, 3), seed=6)
    h0 = np.array([[0.5, -1.0, 2.0], [-0.25, 0.0, 1.0]], "float32") if with_initial_state else None
    expected = reference_scan(np.exp(log_a), np.exp(log_b), h0)[:, -1]
    np.testing.assert_allclose(to_numpy(scan_kernels.log_space_last_state(log_a, log_b, h0)), expected, rtol=1e-5)


def test_last_state_reduction_is_exact_on_a_long_sequence():
    # 4096 steps: the suffix sums of the early steps reach thousands of nats, but those terms
    # weigh exp(-thousands); the recent ones, which decide h_T, get short, exact sums.
    log_a, log_b = gates((2, 4096, 4), seed=7)
    expected = reference_scan(np.exp(log_a), np.exp(log_b))[:, -1]
    last = to_numpy(scan_kernels.log_space_last_state(log_a, log_b))
    np.testing.assert_allclose(last, expected, rtol=2e-6)
    np.testing.assert_allclose(last, to_numpy(scan_kernels.log_space_scan(log_a, log_b)[1]), rtol=2e-6)


def test_log_space_scan_gradients_are_finite():
    log_a, log_b = gates((2, 16, 3), seed=5)
    if keras.backend.backend() == "jax":
        import jax

        grads = jax.jit(
            jax.grad(
                lambda la, lb: scan_kernels.log_space_scan(la, lb)[0].sum(),
                argnums=(0, 1),
            )
        )(log_a, log_b)
    elif keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        la, lb = tf.Variable(log_a), tf.Variable(log_b)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(scan_kernels.log_space_scan(la, lb)[0])
        grads = tape.gradient(loss, [la, lb])
    else:
        import torch

        la = torch.tensor(log_a, requires_grad=True)
        lb = torch.tensor(log_b, requires_grad=True)
        scan_kernels.log_space_scan(la, lb)[0].sum().backward()
        grads = [la.grad, lb.grad]
    for grad in grads:
        assert np.all(np.isfinite(to_numpy(grad)))


def test_last_state_gradient_equals_the_scan_gradient():
    import tensorflow as tf

    if keras.backend.backend() != "tensorflow":
        pytest.skip("one backend's autodiff is enough for this identity")
    log_a, log_b = gates((2, 16, 3), seed=8)
    weights = tf.constant(np.random.default_rng(0).normal(size=(2, 3)).astype("float32"))
    grads = []
    for last in (lambda la, lb: scan_kernels.log_space_scan(la, lb)[1], scan_kernels.log_space_last_state):
        la, lb = tf.Variable(log_a), tf.Variable(log_b)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(weights * last(la, lb))
        grads.append([g.numpy() for g in tape.gradient(loss, [la, lb])])
    for scan_grad, last_grad in zip(*grads):
        np.testing.assert_allclose(last_grad, scan_grad, rtol=1e-4, atol=1e-6)


def test_run_steps_with_outputs_shaped_unlike_the_state():
    # TensorFlow's keras.ops.scan needs outputs shaped like the carry;
    # run_steps lifts that restriction.
    xs = np.arange(12, dtype="float32").reshape(4, 3)  # (time, features)

    def step(state, x_t):
        total, count = state
        total = total + ops.sum(x_t)
        count = count + 1.0
        return (total, count), ops.stack([total, count, total / count])

    init = (ops.zeros(()), ops.zeros(()))
    (total, count), outputs = scan_kernels.run_steps(step, init, xs)
    np.testing.assert_allclose(to_numpy(total), 66.0)
    np.testing.assert_allclose(to_numpy(count), 4.0)
    expected = [[3, 1, 3], [15, 2, 7.5], [36, 3, 12], [66, 4, 16.5]]
    np.testing.assert_allclose(to_numpy(outputs), expected, atol=1e-5)
