"""The published results of the prior report ("Neural Predictive Calculator: Findings", its later version),
copied from its results tables (means of 5 runs; the LLM rows single runs); its public code (``GetXY.py``,
``FNN_FNN2.py``, ``transformer_transformer4.py`` and the rest) defines how each column was computed."""

# "long": how the code behind a row computes its "MAE long": "signed", mean(|y| - prediction) (FNN_FNN2.py);
# "absolute", mean |y - prediction| (transformer_transformer4.py). RNN2's and BiLSTM's code is not public.
REFERENCE_ROWS = {
    "FNN2 (1 x 345 PReLU)": {
        "params": 6211,
        "mae_in": 0.0269,
        "mre_in": 0.0110,
        "mae_out": 2.178,
        "mre_out": 0.250,
        "mae_long": 6.156,
        "score": 10.70,
        "p": 1.4e-6,
        "long": "signed",
    },
    "FNN3 (+ positional enc.)": {
        "params": 8893,
        "mae_in": 0.0275,
        "mre_in": 0.0111,
        "mae_out": 2.372,
        "mre_out": 0.275,
        "mae_long": 5.647,
        "score": 8.91,
        "p": 1.6e-6,
        "long": "signed",
    },
    "RNN2 (SimpleRNN + PReLU)": {
        "params": 222464,
        "mae_in": 0.245,
        "mre_in": 0.094,
        "mae_out": 3.738,
        "mre_out": 0.364,
        "mae_long": 5.519,
        "score": 0.67,
        "p": 1.2e-3,
    },
    "BiLSTM + attention": {
        "params": 6511,
        "mae_in": 0.814,
        "mre_in": 0.303,
        "mae_out": 3.971,
        "mre_out": 0.434,
        "mae_long": 2.932,
        "score": 2.20,
        "p": 0.147,
    },
    "transformer4 (encoder, regression)": {
        "params": 38209,
        "mae_in": 0.0393,
        "mre_in": 0.0163,
        "mae_out": 4.420,
        "mre_out": 0.495,
        "mae_long": 3.886,
        "score": 5.02,
        "p": 1.9e-4,
        "long": "absolute",
    },
    "transformer5": {
        "params": 498241,
        "mae_in": 0.0366,
        "mre_in": 0.0149,
        "mae_out": 4.902,
        "mre_out": 0.540,
        "mae_long": 3.802,
        "score": 4.77,
        "p": 9.7e-4,
        "long": "absolute",
    },
}

REFERENCE_LLM_ROWS = {
    "Gemini 2.5 Pro": {"params": "~140 B", "accuracy_in": 0.9517, "accuracy_out": 0.9951, "accuracy_long": 0.900},
    "Gemma 3 1B": {"params": "1 B", "accuracy_in": 0.9341, "accuracy_out": 0.6333, "accuracy_long": 0.3957},
    "Gemma 3 270M": {"params": "270 M", "accuracy_in": 0.5422, "accuracy_out": 0.0967, "accuracy_long": 0.280},
}
