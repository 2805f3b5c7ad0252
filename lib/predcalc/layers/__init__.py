"""Keras layers of the predictive calculator, one public class per module.

Every layer uses only `keras.ops` in `call`, so it runs on the TensorFlow, JAX and
PyTorch backends, and is registered for `.keras` save/load under the package
name `predcalc`.
"""
