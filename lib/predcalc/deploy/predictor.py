"""Load an exported model with its tokeniser, and predict values.

A ``.tflite`` file (LiteRT), a ``.onnx`` file (ONNX Runtime), a SavedModel directory (TensorFlow,
also a TF-TRT-converted one) or a ``.keras`` file; ``predcalc.json`` beside it names the tokeniser.
Only NumPy and the artifact's runtime are needed, so the same code runs on a Jetson.

Recurrent and scan models also have float32 LiteRT files at longer input lengths
(``model_float32_len<N>.tflite``, listed as ``litert_lengths`` in ``predcalc.json``): given
``model_float32.tflite``, an expression too long for it runs on the shortest file that holds it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from predcalc.data import TokenizerError, get_tokenizer
from predcalc.data.answers import AnswerFormat
from predcalc.data.expressions import quoted_expression
from predcalc.data.tokenizers import signed_terms
from predcalc.deploy.formats import SIDECAR, for_path
from predcalc.deploy.formats.onnx import onnx_providers  # noqa: F401  (its name here before the registry)
from predcalc.paths import REPORTS, RUNS

DEFAULT_MODEL = RUNS / "01_fnn" / "export" / "fnn2" / "model_float32.tflite"
CALCULATOR_MODEL = REPORTS / "calculator" / "model.tflite"  # the learned calculator (one file, a signature per step)


class Predictor:
    """A model file and the tokeniser named in the ``predcalc.json`` beside it; the file's format
    (:func:`predcalc.deploy.formats.for_path`) opens it."""

    def __init__(self, path=DEFAULT_MODEL):
        self.path = Path(path)
        if not self.path.exists():
            hint = (
                " (run `make report` to train and export the default model, or pass --model)"
                if self.path == DEFAULT_MODEL
                else ""
            )
            raise FileNotFoundError(f"no model file at {self.path}{hint}")
        sidecar = self.path.parent / SIDECAR
        if not sidecar.is_file():
            raise FileNotFoundError(f"{sidecar} is missing: it names the tokenizer the model reads")
        self.info = json.loads(sidecar.read_text())
        self.tokenizer = get_tokenizer(self.info["tokenizer"], **self.info.get("tokenizer_config", {}))
        self.format = for_path(self.path)
        self._run = self.format.open(self.path)
        # (tokenizer, path or opened runner) of sibling files that take longer inputs, shortest first
        self._longer = [
            (
                get_tokenizer(self.info["tokenizer"], **{**self.info.get("tokenizer_config", {}), "length": length}),
                longer,
            )
            for length, longer in self.format.longer_inputs(self.path, self.info)
        ]

    @property
    def name(self) -> str:
        return f"{self.info.get('model', '?')} ({self.path.name})"

    def check_answer(self, exact) -> None:
        """Refuse an exact answer the model cannot write (a token-output model writes a sign and at
        most ``answer_format.digits`` digits of an integer): a ``ValueError`` with the reason, where
        the decoded prediction would otherwise be a wrong number printed as if it were an answer."""
        answer = self.info.get("answer_format")
        if not answer:
            return
        digits = int(answer.get("digits", 0))
        if getattr(exact, "denominator", 1) != 1:
            raise ValueError(
                f"{self.info.get('model', 'this model')} writes integer answers only; the exact "
                f"answer {exact} = {float(exact):.6g} is not one"
            )
        if abs(int(exact)) > 10**digits - 1:
            raise ValueError(
                f"{self.info.get('model', 'this model')} writes answers of at most {digits} digits "
                f"(|answer| <= {10**digits - 1:,}); the exact answer {exact} does not fit"
            )

    def encode(self, expressions) -> np.ndarray:
        expressions = list(expressions)
        if self.info.get("any_length") and expressions:  # the file reads any length: pad to the longest
            length = max([self.tokenizer.length, *(len(signed_terms(e)) for e in expressions)])
            tokenizer = get_tokenizer(
                self.info["tokenizer"], **{**self.info.get("tokenizer_config", {}), "length": length}
            )
            return tokenizer.encode_batch(expressions)
        return self.tokenizer.encode_batch(expressions)

    def check_magnitude(self, expressions) -> None:
        """Refuse, in one line, an expression past the bound where the model's float32 arithmetic
        stays exact (``float32_exact_below`` in ``predcalc.json``: every partial sum is at most the sum
        of the numbers' sizes, exact in float32 up to 2^24). The message names the arithmetic this
        file declares (:meth:`arithmetic`): a file that reads float32 and answers in float64 (the sign
        scan's ONNX file) is refused at the same bound, and says so."""
        bound = self.info.get("float32_exact_below")
        if not bound:
            return
        name, limit = self.info.get("model", "this model"), f"2^{int(bound).bit_length() - 1} = {int(bound):,}"
        for expression in expressions:
            size = sum(abs(int(t)) for t in signed_terms(expression) if t.lstrip("-").isdigit())
            if size >= bound:
                arithmetic = self.arithmetic()
                if arithmetic == ("float32", "float32"):
                    head = f"{name} answers in float32, exact while the numbers' sizes sum to less than {limit}"
                else:
                    declared = (
                        f" reads its numbers in {arithmetic[0]} and answers in {arithmetic[1]};" if arithmetic else ":"
                    )
                    head = (
                        f"{name} ({self.path.name}){declared} predcalc answers it only while the numbers' sizes "
                        f"sum to less than {limit}, where the model's float32 files are exact"
                    )
                raise ValueError(f"{head}; {quoted_expression(expression)!r} sums to {size:,}")

    def arithmetic(self) -> tuple[str, str] | None:
        """The dtypes this file reads its input in and writes its output in, as the file declares
        them (ONNX Runtime's and LiteRT's tensor types), e.g. ``("float32", "float64")``; None where
        its runner does not say (a ``.keras`` file, a SavedModel)."""
        return getattr(self._run, "dtypes", None)

    def check_input(self, expression) -> None:
        """Raise, in one line, where this file cannot answer ``expression``: a ``ValueError`` past its
        exact range (:meth:`check_magnitude`), a ``TokenizerError`` where no file of it encodes it
        (too long, an operator its tokeniser lacks)."""
        self.check_magnitude([expression])
        if self._longer:
            self._shortest(expression)
        else:
            self.encode([expression])

    def _shortest(self, expression) -> tuple[int, np.ndarray]:
        """The index of the shortest file that holds ``expression`` (0: the trained length; i: the
        i-th of ``_longer``) and its encoded row; the TokenizerError of the longest where none does."""
        for index, tokenizer in enumerate([self.tokenizer, *(t for t, _ in self._longer)]):
            try:
                return index, tokenizer.encode(expression)
            except TokenizerError as error:
                if index == len(self._longer) or "at most" not in str(error):
                    raise
        raise AssertionError("unreachable: the longest tokenizer raised or returned")

    def predict(self, expressions) -> np.ndarray:
        """Predicted values, one per expression (raises TokenizerError on what it cannot encode)."""
        expressions = list(expressions)
        self.check_magnitude(expressions)
        if not self._longer:
            return self._values(self._run(self.encode(expressions)), len(expressions))
        groups: dict = {}  # runner index -> (positions, encoded rows); 0 is the trained length
        for position, expression in enumerate(expressions):
            index, row = self._shortest(expression)
            groups.setdefault(index, ([], []))
            groups[index][0].append(position)
            groups[index][1].append(row)
        values = np.full(len(expressions), np.nan)
        for index, (positions, rows) in groups.items():
            if index == 0:
                run = self._run
            else:
                tokenizer, run = self._longer[index - 1]
                if isinstance(run, Path):  # opened on first use
                    run = self.format.open(run)
                    self._longer[index - 1] = (tokenizer, run)
            values[positions] = self._values(run(np.stack(rows)), len(rows))
        return values

    @property
    def max_tokens(self) -> int:
        """The longest input this predictor takes (tokens or characters)."""
        return max([self.tokenizer.length, *(t.length for t, _ in self._longer)])

    def _values(self, outputs, n: int) -> np.ndarray:
        outputs = np.asarray(outputs)
        if "answer_format" in self.info:  # raw slot logits: decode them
            return AnswerFormat(**self.info["answer_format"]).values_from_logits(outputs)
        return outputs.astype(np.float64).reshape(n, -1)[:, 0]
