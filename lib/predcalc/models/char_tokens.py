"""Models that read the expression as characters and write the answer as digits.

The prior report's numeric and this project's typed tokens encode only ``+`` and ``-`` between
integers. These read any expression of the extended suite (``predcalc.data.extended``): all
four operators with precedence, parentheses and numbers of any size, one character per token
(:class:`predcalc.data.CharTokenizer`, 64 characters), and write the answer as a sign and up
to eight digits, least significant first (:data:`REVERSED8`).

- ``char_transformer_tokens``: character embedding, sinusoidal positions, two encoder layers
  (d_model 64, 4 heads, FFN 128) with the padding masked, and the digit readout (FFN 64).
- ``char_lstm_tokens``: character embedding (32), one LSTM (80 units, padding masked) and the
  same digit readout.

Both stay under 100k parameters and train with the transformer schedule (AdamW, linear warm-up,
cosine decay).
"""

from __future__ import annotations

import keras

from predcalc.models.registry import register_model
from predcalc.models.token_heads import AnswerFormat, token_head, token_loss
from predcalc.models.transformer import transformer_encoder

REVERSED8 = AnswerFormat(digits=8, reversed=True)
CHARACTERS = {"length": 64}
# What both models state: characters in, sign and reversed digits out, the transformer schedule.
CHAR_TOKENS = {
    "tokenizer": "char",
    "tokenizer_config": CHARACTERS,
    "answer_format": REVERSED8,
    "loss": token_loss(),
    "optimizer": "adamw_cosine",
}


@register_model(
    "char_transformer_tokens",
    label="char transformer 2 x d64 + digit readout (reversed, 8 digits)",
    family="transformer",
    **CHAR_TOKENS,
)
def char_transformer_tokens(
    tokenizer,
    d_model: int = 64,
    num_heads: int = 4,
    num_layers: int = 2,
    ffn_units: int = 128,
    readout_heads: int = 4,
    readout_ffn_units: int = 64,
) -> keras.Model:
    """A transformer encoder over characters writing sign and reversed digits."""
    inputs, x = transformer_encoder(
        tokenizer, d_model=d_model, num_heads=num_heads, num_layers=num_layers, ffn_units=ffn_units, mask_padding=True
    )
    logits = token_head(x, REVERSED8, num_heads=readout_heads, ffn_units=readout_ffn_units)
    return keras.Model(inputs, logits, name="char_transformer_tokens")


@register_model(
    "char_lstm_tokens",
    label="char LSTM 80 + digit readout (reversed, 8 digits)",
    family="RNN",
    variable_length=True,
    short_name="character LSTM",
    **CHAR_TOKENS,
)
def char_lstm_tokens(
    tokenizer, embedding: int = 32, units: int = 80, readout_heads: int = 4, readout_ffn_units: int = 64
) -> keras.Model:
    """An LSTM over characters writing sign and reversed digits."""
    inputs = keras.Input((tokenizer.length,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(tokenizer.vocabulary_size, embedding, mask_zero=True, name="char_embedding")(inputs)
    x = keras.layers.LSTM(units, return_sequences=True, name="lstm")(x)
    logits = token_head(x, REVERSED8, num_heads=readout_heads, ffn_units=readout_ffn_units)
    return keras.Model(inputs, logits, name="char_lstm_tokens")
