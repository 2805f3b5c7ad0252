"""The NumPy BPTT of seed 004's worked example (predcalc.studies.backprop)."""

import numpy as np
import pytest

from predcalc.studies import backprop


@pytest.fixture(scope="module")
def example():
    return backprop.reference004_example()


def test_the_problem_is_the_articles(example):
    parameters, inputs, targets, learning_rate = example
    np.testing.assert_array_equal(inputs[:3], [[0, 0, 1], [0, 1, 1], [1, 0, 1]])  # 1, 3, 5
    np.testing.assert_array_equal(inputs[3:], 0.0)
    assert sorted(targets) == [4, 5, 6] and learning_rate == 0.5
    np.testing.assert_array_equal(np.stack([targets[t] for t in (4, 5, 6)]), [[1, 0, 1], [0, 1, 1], [0, 0, 1]])
    assert parameters.W_s.shape == (3, 2) and parameters.W_o.shape == (2, 3)


def test_binary_digits():
    np.testing.assert_array_equal(backprop.binary_digits(6), [1, 1, 0])
    with pytest.raises(ValueError, match="value must be in"):
        backprop.binary_digits(8)


def test_forward_first_steps_by_hand(example):
    parameters, inputs, targets, _ = example
    fwd = backprop.forward(parameters, inputs, [4, 5, 6])
    # s_1^in = [0 0 1] W_s + B_s = [0.25 + 0.5, 0.25 + 0.35]
    np.testing.assert_allclose(fwd.s_in[0], [0.75, 0.60], atol=1e-15)
    np.testing.assert_allclose(fwd.s[1], np.tanh([0.75, 0.60]), atol=1e-15)
    s1 = np.tanh([0.75, 0.60])
    s2_in = np.array([0.0, 0.25]) + np.array([0.1 * s1[0] + 0.5 * s1[1], -0.25 * s1[0] + 0.5 * s1[1]]) + [0.5, 0.35]
    np.testing.assert_allclose(fwd.s_in[1], s2_in, atol=1e-15)
    np.testing.assert_array_equal(fwd.s[0], [0.0, 0.0])
    o4_in = fwd.s[4] @ parameters.W_o + parameters.B_o
    np.testing.assert_allclose(fwd.o[4], 1 / (1 + np.exp(-o4_in)), atol=1e-15)
    assert sorted(fwd.o) == [4, 5, 6]


def test_losses_follow_their_definitions():
    o = {1: np.array([0.8, 0.3, 0.6])}
    y = {1: np.array([1.0, 0.0, 1.0])}
    assert backprop.step_losses(o, y)[1] == pytest.approx(-np.log(0.8) - np.log(0.6), abs=1e-15)
    assert backprop.step_losses(o, y, "binary")[1] == pytest.approx(-np.log(0.8) - np.log(0.7) - np.log(0.6), abs=1e-15)
    np.testing.assert_allclose(backprop.output_error(o[1], y[1]), [-0.2, 0.0, -0.4], atol=1e-15)
    np.testing.assert_allclose(backprop.output_error(o[1], y[1], "binary"), [-0.2, 0.3, -0.4], atol=1e-15)
    with pytest.raises(ValueError, match="loss must be one of"):
        backprop.step_losses(o, y, "mse")


@pytest.mark.parametrize("loss", ["article", "binary"])
def test_gradients_match_finite_differences(example, loss):
    parameters, inputs, targets, _ = example
    _, _, gradients = backprop.bptt(parameters, inputs, targets, loss)
    numerical = backprop.numerical_gradients(parameters, inputs, targets, loss)
    for name in backprop.PARAMETER_NAMES:
        np.testing.assert_allclose(gradients[name], numerical[name], atol=1e-8, err_msg=name)


def test_per_loss_sweeps_sum_to_the_single_sweep(example):
    parameters, inputs, targets, _ = example
    _, per_loss, totals = backprop.per_loss_gradients(parameters, inputs, targets)
    _, deltas, gradients = backprop.bptt(parameters, inputs, targets)
    np.testing.assert_allclose(sum(item.deltas for item in per_loss.values()), deltas, atol=1e-15)
    for name in backprop.PARAMETER_NAMES:
        np.testing.assert_allclose(totals[name], gradients[name], atol=1e-15)
    # a loss at step t sends nothing to later steps
    np.testing.assert_array_equal(per_loss[4].deltas[4:], 0.0)
    np.testing.assert_array_equal(per_loss[4].gradients["W_o"][:, 1], 0.0)  # y_4[1] = 0: no gradient


def test_each_loss_gradient_matches_finite_differences(example):
    parameters, inputs, targets, _ = example
    _, per_loss, _ = backprop.per_loss_gradients(parameters, inputs, targets)
    for t in targets:
        numerical = backprop.numerical_gradients(parameters, inputs, {t: targets[t]})
        for name in backprop.PARAMETER_NAMES:
            np.testing.assert_allclose(per_loss[t].gradients[name], numerical[name], atol=1e-8)


def test_delta_is_the_gradient_of_the_pre_activation(example):
    """Delta_j = dL_t/ds_j^in: shift one pre-activation through the bias of that step only."""
    parameters, inputs, targets, _ = example
    _, per_loss, _ = backprop.per_loss_gradients(parameters, inputs, targets)
    epsilon, j, unit = 1e-6, 2, 1  # step 2, second unit

    def loss_with_shift(shift):
        # adding `shift` to input I_j's contribution = adding it to s_j^in alone
        W_s = np.vstack([parameters.W_s, np.eye(2)[unit] * shift])
        shifted = backprop.ElmanParameters(
            W_s=W_s, U=parameters.U, B_s=parameters.B_s, W_o=parameters.W_o, B_o=parameters.B_o
        )
        extra = np.zeros((len(inputs), 1))
        extra[j - 1] = 1.0
        return backprop.total_loss(shifted, np.hstack([inputs, extra]), {5: targets[5]})

    numerical = (loss_with_shift(epsilon) - loss_with_shift(-epsilon)) / (2 * epsilon)
    assert per_loss[5].deltas[j - 1, unit] == pytest.approx(numerical, abs=1e-9)


def test_gradient_descent_step_lowers_the_loss(example):
    parameters, inputs, targets, learning_rate = example
    loss, _, gradients = backprop.bptt(parameters, inputs, targets)
    updated = backprop.gradient_descent(parameters, gradients, learning_rate)
    np.testing.assert_allclose(updated.U, parameters.U - 0.5 * gradients["U"], atol=1e-15)
    assert backprop.total_loss(updated, inputs, targets) < loss


def test_parameters_are_validated():
    with pytest.raises(ValueError, match=r"U must have shape \(2, 2\)"):
        backprop.ElmanParameters(
            W_s=np.zeros((3, 2)), U=np.zeros((3, 3)), B_s=np.zeros(2), W_o=np.zeros((2, 3)), B_o=np.zeros(3)
        )
    parameters, inputs, _, _ = backprop.reference004_example()
    with pytest.raises(ValueError, match="output steps must be in 1..6"):
        backprop.forward(parameters, inputs, [7])
