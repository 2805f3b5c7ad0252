import numpy as np
import pytest

from predcalc.data import CharTokenizer, NumericTokenizer, TokenizerError, canonical, get_tokenizer, signed_terms


def test_numeric_tokenizer_is_the_references():
    encoded = NumericTokenizer().encode("3 - -2 + 4")
    np.testing.assert_array_equal(encoded, [3, 0, -2, 1, 4] + [0.5] * 10)
    assert encoded.dtype == np.float32


def test_numeric_tokenizer_accepts_any_spacing():
    np.testing.assert_array_equal(NumericTokenizer().encode("3- -2+4"), NumericTokenizer().encode("3 - -2 + 4"))


def test_numeric_tokenizer_holds_eight_numbers():
    eight = " + ".join(["1"] * 8)
    assert NumericTokenizer().encode(eight).shape == (15,)
    with pytest.raises(TokenizerError, match="has 17 tokens; the numeric tokenizer holds at most 15"):
        NumericTokenizer().encode(eight + " - 2")


@pytest.mark.parametrize(
    "text, message",
    [
        ("2 * 3", "encodes only \\+ and -"),
        ("(1 + 2)", "encodes only \\+ and -"),
        ("1 + a", "unexpected character 'a'"),
        ("", "empty expression"),
    ],
)
def test_numeric_tokenizer_errors(text, message):
    with pytest.raises(TokenizerError, match=message):
        NumericTokenizer().encode(text)


def test_signed_terms_and_canonical_form():
    assert signed_terms("3- -2+4") == ["3", "-", "-2", "+", "4"]
    assert canonical("--3*(2+-(1))") == "3 * (2 + -(1))"
    assert canonical("-(3- -2)*4") == "-(3 - -2) * 4"


def test_char_tokenizer_round_trip_and_padding():
    tokenizer = CharTokenizer(length=20)
    ids = tokenizer.encode("3- -2+4")
    assert ids.shape == (20,) and ids.dtype == np.int32
    assert tokenizer.decode(ids) == "3 - -2 + 4"
    assert (ids[len("3 - -2 + 4") :] == CharTokenizer.PAD).all()
    assert tokenizer.decode([tokenizer.index["7"], CharTokenizer.END, tokenizer.index["1"]]) == "7"


def test_char_tokenizer_errors():
    with pytest.raises(TokenizerError, match="the char tokenizer holds at most 5"):
        CharTokenizer(length=5).encode("1 + 2 + 3")
    with pytest.raises(TokenizerError, match="unexpected character"):
        CharTokenizer().encode("1 + y")
    with pytest.raises(ValueError, match="length must be positive"):
        CharTokenizer(length=0)


def test_get_tokenizer():
    assert get_tokenizer("numeric", length=7).length == 7
    with pytest.raises(ValueError, match="unknown tokenizer 'words'"):
        get_tokenizer("words")


def test_batch_encoding_shapes():
    assert NumericTokenizer().encode_batch(["1 + 2", "3 - 4"]).shape == (2, 15)
    assert CharTokenizer(length=12).encode_batch([]).shape == (0, 12)


def test_typed_tokenizer_keeps_syntax_apart_from_values():
    from predcalc.data import TypedTokenizer

    encoded = TypedTokenizer(length=6).encode("1 - 0 + -1")
    np.testing.assert_array_equal(
        encoded, [[1, 0, 0, 1], [0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 0, 0], [-1, 0, 0, 1], [0, 0, 0, 0]]
    )
    assert TypedTokenizer().encode_batch(["1 + 2"]).shape == (1, 15, 4)
    with pytest.raises(TokenizerError, match="encodes only \\+ and -"):
        TypedTokenizer().encode("2 * 3")
    with pytest.raises(TokenizerError, match="holds at most 3"):
        TypedTokenizer(length=3).encode("1 + 2 + 3")
