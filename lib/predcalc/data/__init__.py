"""Data: expressions, the reference protocol, tokenisers and user files."""

from predcalc.data.expressions import (
    ExpressionError,
    count_numbers,
    depth,
    evaluate,
    format_expression,
    parse,
    tokenize,
)
from predcalc.data.files import ExpressionFileError, load_expression_file
from predcalc.data.protocol import Protocol, Split, make_split, reference_protocol
from predcalc.data.tokenizers import (
    CharTokenizer,
    NumericTokenizer,
    TokenizerError,
    TypedTokenizer,
    canonical,
    get_tokenizer,
    signed_terms,
)

__all__ = [
    "CharTokenizer",
    "ExpressionError",
    "ExpressionFileError",
    "NumericTokenizer",
    "Protocol",
    "Split",
    "TokenizerError",
    "TypedTokenizer",
    "canonical",
    "count_numbers",
    "depth",
    "evaluate",
    "format_expression",
    "get_tokenizer",
    "load_expression_file",
    "make_split",
    "parse",
    "reference_protocol",
    "signed_terms",
    "tokenize",
]
