"""What notebook 07 shows of the real Gemma 3 270M: the conversion, the loss curves, the Jetson path."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from predcalc.paths import save_figure
from predcalc.studies import gemma_study, gemma_weights, llm
from predcalc.studies.gemma_adapter import GemmaAdapter


def conversion_lines(prior_rows: dict) -> list[str]:
    """The prior report's published rows, and what the GGUF conversion mapped."""
    lines = [
        f"prior report, {name}: "
        + " / ".join(f"{100 * row[f'accuracy_{t}']:.2f} %" for t in ("in", "out", "long"))
        + " (in range / out of range / long)"
        for name, row in prior_rows.items()
    ]
    conversion = gemma_weights.conversion_report()
    meta = conversion["metadata"]
    lines += [
        gemma_weights.LABEL,
        f"{conversion['tensors']} GGUF tensors mapped onto {conversion['weights']} backbone weights; "
        f"{conversion['params']:,} parameters",
        ", ".join(
            f"{k} {meta[k]}" for k in ("num_layers", "hidden_dim", "num_query_heads", "head_dim", "vocabulary_size")
        ),
    ]
    return lines


def plot_losses(record: dict, path):
    """Each seed's answer-token loss (10-step mean) against the step; saved to ``path``."""
    import matplotlib.pyplot as plt  # figures only where one is drawn

    figure, axis = plt.subplots(figsize=(7, 3.5))
    for run in record["seeds"]:
        smooth = np.convolve(np.asarray(run["losses"]), np.ones(10) / 10, mode="valid")
        axis.plot(np.arange(len(smooth)) + 10, smooth, label=f"seed {run['seed']}")
    axis.set(
        xlabel="step",
        ylabel="answer-token loss (10-step mean)",
        yscale="log",
        title="Gemma 3 270M, LoRA " + record["seeds"][0]["recipe"]["name"],
    )
    axis.legend()
    figure.tight_layout()
    save_figure(figure, Path(path))
    return figure


def jetson_path(protocol, work, output, record: dict, n_export: int = 200, n_cli: int = 20) -> list[str]:
    """The export check (stored in ``work``) into ``record["export"]``, and the command line's model
    (base weights + the run folder's adapter) on ``n_cli`` in-range expressions."""
    adapter = Path(output) / record["run_folder"]["adapter"]
    export = record["export"] = gemma_study.export_stage(protocol, work, adapter, n=n_export)
    adapted = GemmaAdapter(output)  # what `predcalc evaluate --model <run folder>` builds
    check = llm.subsample(protocol.test_in, n_cli, 0)
    right = int(sum(a == v for a, v in zip(adapted.predict(check.expressions), check.values)))
    return [
        f"{export['format']}: {export['size_mb']} MB, loaded in {export['load_seconds']} s, "
        f"{export['tokens_per_second']} tokens/s; same answers as Keras on {export['same']} of {export['n']}",
        f"{adapted.name}: {right} of {len(check)} in-range expressions answered exactly through the command line's model",
    ]
