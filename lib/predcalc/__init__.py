"""predcalc: a neural network reads an arithmetic expression and predicts its value."""

__version__ = "0.1.0"
