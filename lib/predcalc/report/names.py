"""The names the main text gives models: short, and saying what each model is (the registry names
stay in the Appendix)."""

from __future__ import annotations

import re

# Names the main text uses: short, and saying what the model is (registry names: the Appendix).
SHORT_NAMES = {
    "scan_exact": "sign scan, straight-through gates",
    "transformer4_local_rounded": "gated-sum transformer with rounded gates",
    "fnn2": "FNN 1 x 345 (prior report's FNN2)",
    "fnn2_cosine": "FNN 1 x 345, cosine schedule",
    "fnn_baseline": "FNN 2 x 30 (baseline)",
    "rnn2": "RNN 470 units (prior report's RNN2)",
    "lstm": "LSTM 64",
    "gru": "GRU 64",
    "lstm_typed": "LSTM 32, typed tokens",
    "transformer4": "transformer, this project's recipe",
    "transformer5": "large transformer, this project's recipe",
    "bilstm_attention": "BiLSTM + attention (prior report's)",
    "transformer4_reference": "transformer, prior report's recipe",
    "transformer5_reference": "large transformer, prior report's recipe",
    "transformer4_gated": "transformer, gated-sum readout only",
    "transformer4_local": "gated-sum transformer",
    "transformer4_local_bounded": "bounded gated-sum transformer",
    "min_gru": "minGRU",
    "min_lstm": "minLSTM",
    "slstm": "sLSTM",
    "mlstm_stable": "mLSTM, stabilised",
    "mamba_bounded": "Mamba, bounded state",
    "nau_nmu": "NMU + NAU per term (arithmetic units)",
    "nau_nmu_dense": "NMU + NAU on all tokens (arithmetic units)",
    "scan_typed": "typed scan",
    "scan_typed_solved": "typed scan, gates set by hand, readout solved",
    "scan_typed_readout_solved": "typed scan, readout solved",
    "calculator": "step networks in a coded loop",
    "char_lstm_tokens": "character LSTM",
}


def with_short_names(text: str) -> str:
    """Registry names in backticks replaced by the main text's names (others kept as they are)."""
    return re.sub(r"`(\w+)`", lambda m: short_name(m.group(1)) if m.group(1) in SHORT_NAMES else m.group(0), text)


def short_name(name: str) -> str:
    """The main text's name of a registry model (the registry name where none is set)."""
    return SHORT_NAMES.get(name, name)
