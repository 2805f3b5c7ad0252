"""Every discrete pattern of the trained sign scan (``scan_exact``), scored through its Keras layer:
which token types open the gate, and a sign in {-1, 0, 1} for each entry of ``W_h``, ``s_0`` and ``r``."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

import keras
import numpy as np
from tqdm.auto import tqdm

from predcalc.data import Split, TypedTokenizer, signed_terms
from predcalc.paths import RUNS
from predcalc.studies.edges import THIRD_HELDOUT_SEED
from predcalc.studies.exact_scan import NOTEBOOK as EXACT_NOTEBOOK
from predcalc.studies.exact_scan import development_sets, encode_any_length, heldout, suite_description
from predcalc.training.exact import MODEL, ExactRecipe
from predcalc.training.fit import build
from predcalc.training.metrics import exact_accuracy

OPEN_LOGIT, SHUT_LOGIT = 2.0, 0.0  # a gate's logit W_z: with the fixed offset -1 it opens iff W_z > 1
SIGNS = (-1, 0, 1)
TYPE_NAMES = {"is_plus": "+", "is_minus": "-", "is_number": "number"}
SEARCH_DRAWS = (10, 100, 10_000)  # draws of the random search priced (10,000: gradient descent's steps)
CALL_COST = 25_000  # token steps of one row that cost about as much as one more call of the compiled model
TRAINING = "training"  # the protocol's training split: the only data gradient descent sees
DEVELOPMENT = "development/"  # prefix of the development sets' names
HELDOUT = f"heldout_{THIRD_HELDOUT_SEED}/"  # prefix of the held-out suite's sets (scored in Keras here)


@dataclasses.dataclass(frozen=True)
class Pattern:
    """One discrete pattern: each type's gate open (1) or shut (0), and the signs of ``W_h``, ``s_0``, ``r``."""

    gates: tuple[int, ...]
    candidate: tuple[int, ...]
    initial: int
    readout: int

    def code(self) -> str:
        """``gates 110 | W_h +-0 | s0 + | r +`` (a gate per type, a sign per weight)."""
        sign = {-1: "-", 0: "0", 1: "+"}
        return (
            f"gates {''.join(map(str, self.gates))} | W_h {''.join(sign[h] for h in self.candidate)} "
            f"| s0 {sign[self.initial]} | r {sign[self.readout]}"
        )

    def function(self) -> str:
        """What the layer computes (patterns with one function answer every input alike)."""
        sign = {-1: "-", 0: "0", 1: "+"}
        products = "".join(sign[h * self.readout] if g else "." for g, h in zip(self.gates, self.candidate))
        return f"gates {''.join(map(str, self.gates))} | W_h r {products} | s0 r {sign[self.initial * self.readout]}"


def pattern_count(types: int) -> int:
    return 2**types * 3**types * 9


def enumerate_patterns(types: int) -> list[Pattern]:
    if isinstance(types, bool) or not isinstance(types, int | np.integer) or types < 1:
        raise ValueError(f"types must be a positive integer (the number of type features). Received: types={types!r}")
    return [
        Pattern(tuple(gates), tuple(candidate), initial, readout)
        for gates in itertools.product((0, 1), repeat=int(types))
        for candidate in itertools.product(SIGNS, repeat=int(types))
        for initial in SIGNS
        for readout in SIGNS
    ]


# the shipped recipe's known solution for the typed tokens (+, -, number): + and - open the gate and
# write +1 and -1, a number leaves it shut, and the sum starts with the + sign
SOLUTION = Pattern(gates=(1, 1, 0), candidate=(1, -1, 0), initial=1, readout=1)


def type_names() -> list[str]:
    return [TYPE_NAMES.get(name, name) for name in TypedTokenizer.FEATURES[1:]]


def scan_model(recipe: ExactRecipe | None = None):
    """``scan_exact`` built as training builds it: ``(model, layer, tokenizer)``, its gate offset fixed."""
    recipe = recipe or ExactRecipe()
    if recipe.learn_offset or not recipe.straight_through or recipe.units != 1:
        raise ValueError(
            "the patterns are those of one unit with hard gates and a fixed offset; "
            f"received units={recipe.units}, straight_through={recipe.straight_through}, "
            f"learn_offset={recipe.learn_offset}"
        )
    _, model, tokenizer = build(MODEL, seed=0, **recipe.layer_arguments())
    return model, model.get_layer("signed_sum"), tokenizer


def pattern_weights(layer, pattern: Pattern) -> list[np.ndarray]:
    types = int(layer.gate_kernel.shape[0])
    if len(pattern.gates) != types or len(pattern.candidate) != types:
        raise ValueError(f"the pattern has {len(pattern.gates)} types; the layer reads {types}")
    gates = np.where(np.asarray(pattern.gates) == 1, OPEN_LOGIT, SHUT_LOGIT).reshape(types, 1)
    candidate = np.asarray(pattern.candidate, dtype=np.float64).reshape(types, 1)
    return [gates, candidate, np.asarray([pattern.initial], np.float64), np.asarray([pattern.readout], np.float64)]


def _variables(layer) -> list:
    return [layer.gate_kernel, layer.candidate_kernel, layer.initial_state, layer.readout]


def set_pattern(layer, pattern: Pattern) -> None:
    for variable, value in zip(_variables(layer), pattern_weights(layer, pattern)):
        variable.assign(value)


def _batches(tokenizer, sets: dict[str, Split]) -> list[tuple[np.ndarray, dict[str, slice]]]:
    """The sets' tokens in few padded batches (lengths merged while padding costs less than a call)."""
    lengths: dict[int, list[str]] = {}
    for name, split in sets.items():
        lengths.setdefault(max(tokenizer.length, *(len(signed_terms(e)) for e in split.expressions)), []).append(name)
    groups: list[tuple[int, list[str]]] = []  # (longest, names), by length
    for length in sorted(lengths):
        if groups:
            longest, names = groups[-1]
            rows = sum(len(sets[n]) for n in names)
            if rows * (length - longest) <= CALL_COST:  # padding the shorter rows costs less than a call
                groups[-1] = (length, names + lengths[length])
                continue
        groups.append((length, list(lengths[length])))
    batches = []
    for _, names in groups:
        expressions, where = [], {}
        for name in names:
            where[name] = slice(len(expressions), len(expressions) + len(sets[name]))
            expressions += list(sets[name].expressions)
        batches.append((encode_any_length(tokenizer, expressions).astype(np.float64), where))
    return batches


def _runner(model, layer, inputs: list[np.ndarray]):
    """``run(pattern) -> [predictions per batch]``: one XLA call on TensorFlow, eager elsewhere."""
    if keras.backend.backend() != "tensorflow":

        def run(pattern):
            set_pattern(layer, pattern)
            return [np.asarray(model(x)) for x in inputs]

        return run
    import tensorflow as tf  # after the backend check above: the TensorFlow backend only

    features, types = int(model.inputs[0].shape[-1]), int(layer.gate_kernel.shape[0])
    signature = [
        [tf.TensorSpec((None, None, features), tf.float64)] * len(inputs),
        [tf.TensorSpec((types, 1), tf.float64)] * 2 + [tf.TensorSpec((1,), tf.float64)] * 2,
    ]

    @tf.function(jit_compile=True, input_signature=signature)
    def compiled(batches, weights):
        for variable, value in zip(_variables(layer), weights):
            variable.assign(value)
        return [model(x) for x in batches]

    tensors = [tf.constant(x) for x in inputs]
    return lambda pattern: [y.numpy() for y in compiled(tensors, pattern_weights(layer, pattern))]


def score_patterns(
    patterns: list[Pattern], sets: dict[str, Split], recipe: ExactRecipe | None = None, progress: bool = False
) -> dict[str, np.ndarray]:
    """Exact accuracy of each pattern on each set, through the real layer: ``{set: (patterns,)}``."""
    if not sets or any(len(split) == 0 for split in sets.values()):
        raise ValueError("score_patterns needs at least one set, none of them empty")
    model, layer, tokenizer = scan_model(recipe)
    batches = _batches(tokenizer, sets)
    run = _runner(model, layer, [inputs for inputs, _ in batches])
    predictions = {name: np.zeros((len(patterns), len(split))) for name, split in sets.items()}
    for index, pattern in enumerate(tqdm(patterns, desc="patterns", disable=not progress)):
        for (_, where), outputs in zip(batches, run(pattern)):
            outputs = np.asarray(outputs, dtype=np.float64).reshape(-1)
            for name, rows in where.items():
                predictions[name][index] = outputs[rows]
    keras.backend.clear_session()
    return {
        name: np.array([exact_accuracy(sets[name].values, row) for row in rows]) for name, rows in predictions.items()
    }


def scored_sets(protocol, development_count: int = 0, heldout_count: int = 300) -> dict[str, Split]:
    """The training split, the development sets and the held-out suite, by prefixed name."""
    sets = {TRAINING: protocol.train}
    sets.update({DEVELOPMENT + n: split for n, split in development_sets(protocol, development_count).items()})
    sets.update({HELDOUT + n: split for n, split in heldout(heldout_count, protocol.seed).items()})
    return sets


def search_odds(patterns: int, exact: int, draws=SEARCH_DRAWS) -> dict:
    """A uniform random search over ``patterns``, ``exact`` of them exact: its share and odds."""
    if patterns < 1 or not 0 <= exact <= patterns:
        raise ValueError(f"need 0 <= exact <= patterns and patterns >= 1. Received: {exact} of {patterns}")
    share = exact / patterns
    return {
        "share": share,
        "expected_draws": patterns / exact if exact else None,
        "expected_draws_without_replacement": (patterns + 1) / (exact + 1),
        "at_least_one": {str(d): 1.0 - (1.0 - share) ** d for d in draws},
        "none_in": {str(d): (1.0 - share) ** d for d in draws},
    }


def nearest_pattern(weights: dict, gate_offset: float = -1.0) -> tuple[Pattern, float]:
    """The pattern trained weights round to, and the largest distance of a read weight from it."""
    missing = [k for k in ("gate_kernel", "candidate_kernel", "initial_state", "readout") if k not in weights]
    if missing:
        raise ValueError(f"the weights lack {', '.join(missing)}")
    gates = tuple(int(w + gate_offset > 0) for w in weights["gate_kernel"])
    rounded = {k: [int(np.clip(np.rint(w), -1, 1)) for w in weights[k]] for k in weights if k != "gate_kernel"}
    pattern = Pattern(gates, tuple(rounded["candidate_kernel"]), rounded["initial_state"][0], rounded["readout"][0])
    read = [h for g, h in zip(gates, zip(weights["candidate_kernel"], pattern.candidate)) if g]
    read += [(weights["initial_state"][0], pattern.initial), (weights["readout"][0], pattern.readout)]
    return pattern, max(abs(w - r) for w, r in read)


def trained_patterns(exact_record: dict, gate_offset: float = -1.0) -> dict[str, dict[str, dict]]:
    """Each trained seed of the sign scan's record rounded to its pattern, by group."""
    groups = {"choosing": exact_record.get("seeds") or {}, "fresh": (exact_record.get("fresh") or {}).get("records")}
    out = {}
    for group, runs in groups.items():
        for seed, run in sorted((runs or {}).items(), key=lambda item: int(item[0])):
            pattern, distance = nearest_pattern(run["weights"], gate_offset)
            out.setdefault(group, {})[str(seed)] = {
                "pattern": pattern.code(),
                "function": pattern.function(),
                "distance": distance,
                "development_exact": all(v == 1.0 for v in run["scores"].values()),
            }
    return out


def _all_exact(scores: dict[str, np.ndarray], prefix: str) -> np.ndarray:
    names = [n for n in scores if n.startswith(prefix)]
    return np.all([scores[n] == 1.0 for n in names], axis=0) if names else np.ones(len(scores[TRAINING]), bool)


def search_record(
    patterns: list[Pattern], scores: dict[str, np.ndarray], exact_record: dict | None = None, gate_offset=-1.0
) -> dict:
    """The study's results: the exact patterns by function, the search's odds, the seeds' patterns."""
    training = scores[TRAINING] == 1.0
    development, held = _all_exact(scores, DEVELOPMENT), _all_exact(scores, HELDOUT)
    exact = list(np.flatnonzero(training))
    functions: dict[str, dict] = {}
    for i in exact:
        entry = functions.setdefault(patterns[i].function(), {"patterns": [], "development": True, "heldout": True})
        entry["patterns"].append(patterns[i].code())
        entry["development"] &= bool(development[i])
        entry["heldout"] &= bool(held[i])
    k = len(exact)
    record = {
        "types": names
        if len(names := type_names()) == len(patterns[0].gates)
        else [f"type {i + 1}" for i in range(len(patterns[0].gates))],
        "count": len(patterns),
        "formula": f"2^{len(patterns[0].gates)} * 3^{len(patterns[0].gates)} * 3 * 3",
        "sets": list(scores),
        "exact_per_set": {name: int(np.sum(values == 1.0)) for name, values in scores.items()},
        "training_accuracy": [round(float(v), 6) for v in scores[TRAINING]],
        "exact": {
            "training": k,
            "development": int(np.sum(training & development)),
            "heldout": int(np.sum(training & held)),
            "everywhere": int(np.sum(training & development & held)),
            "heldout_any": int(np.sum(held)),  # exact on every held-out set, whatever their training score
        },
        "training_exact": [
            {
                "pattern": patterns[i].code(),
                "function": patterns[i].function(),
                "scores": {name: float(values[i]) for name, values in scores.items()},
            }
            for i in exact
        ],
        "functions": functions,
        "search": search_odds(len(patterns), k),
        "heldout_given_training": float(np.sum(training & held)) / k if k else None,
    }
    if exact_record:
        trained = trained_patterns(exact_record, gate_offset)
        codes = {p.code(): i for i, p in enumerate(patterns)}
        for runs in trained.values():
            for run in runs.values():
                i = codes[run["pattern"]]
                run["training_exact"] = bool(training[i])
                run["everywhere"] = bool(training[i] & development[i] & held[i])
                run["training_accuracy"] = float(scores[TRAINING][i])
        record["trained"] = trained
        record["gradient_descent_steps"] = int((exact_record.get("recipe") or {}).get("steps", ExactRecipe.steps))
    return record


def run_search(
    protocol, development_count: int = 0, heldout_count: int = 300, exact_record=None, recipe=None, progress=True
) -> tuple[dict, dict[str, np.ndarray]]:
    """Every pattern scored on :func:`scored_sets`: ``(record, scores)``, the record without the notebook's keys."""
    _, layer, _ = scan_model(recipe)
    types, gate_offset = int(layer.gate_kernel.shape[0]), float(layer.gate_offset)
    if types != len(type_names()):
        raise ValueError(f"the layer reads {types} types; the typed tokens have {len(type_names())}")
    patterns = enumerate_patterns(types)
    if len(patterns) != pattern_count(types):
        raise AssertionError(f"{len(patterns)} patterns enumerated, {pattern_count(types)} expected")
    sets = scored_sets(protocol, development_count, heldout_count)
    scores = score_patterns(patterns, sets, recipe, progress=progress)
    record = search_record(patterns, scores, exact_record, gate_offset)
    record["data"] = {
        "protocol_seed": protocol.seed,
        "sizes": {name: len(split) for name, split in sets.items()},
        "heldout": suite_description({n.removeprefix(HELDOUT): s for n, s in sets.items() if n.startswith(HELDOUT)}),
        "scored": "in Keras (float64), not through exported files",
    }
    return record, scores


def stored_exact_record(runs=None) -> dict | None:
    path = Path(runs or RUNS) / EXACT_NOTEBOOK / "metrics.json"
    return json.loads(path.read_text()) if path.is_file() else None


def pattern_table(record: dict) -> list[dict]:
    rows = []
    for entry in record["training_exact"]:
        scores = entry["scores"]
        rows.append(
            {
                "pattern": entry["pattern"],
                "function": entry["function"],
                "lowest, development": min(v for n, v in scores.items() if n.startswith(DEVELOPMENT)),
                "lowest, held-out (Keras)": min(v for n, v in scores.items() if n.startswith(HELDOUT)),
            }
        )
    return rows


def seed_table(record: dict) -> list[dict]:
    return [
        {
            "seeds": group,
            "seed": int(seed),
            "pattern": run["pattern"],
            "training accuracy of the pattern": run["training_accuracy"],
            "training-exact": run["training_exact"],
            "exact on every set": run["everywhere"],
            "largest distance of a read weight": run["distance"],
        }
        for group, runs in (record.get("trained") or {}).items()
        for seed, run in runs.items()
    ]


def trained_summary(record: dict) -> dict:
    runs = [run for group in (record.get("trained") or {}).values() for run in group.values()]
    landed = [run for run in runs if run["training_exact"]]
    return {
        "seeds": len(runs),
        "training_exact": len(landed),
        "everywhere": sum(run["everywhere"] for run in landed),
        "distance": max((run["distance"] for run in landed), default=0.0),
        "functions": sorted({run["function"] for run in landed}),
        "off_pattern": [
            int(seed)
            for group in (record.get("trained") or {}).values()
            for seed, run in group.items()
            if not run["training_exact"]
        ],
    }
