"""Where the repository's folders are: the one place that knows the layout on disk.

Light on purpose (no third-party import): the deploy runtimes and the command line read it
on a Jetson without Keras or TensorFlow.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import shutil
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # lib/predcalc/paths.py -> the repository
NOTEBOOKS = ROOT / "notebooks"
REPORTS = ROOT / "reports"
BENCH_FILE = REPORTS / "bench.json"  # predcalc bench
RECOMMENDED_FILE = REPORTS / "recommended.json"  # the one list of the models the findings recommend
RUNS = REPORTS / "runs"  # the committed results: only a full run (``--profile full``) writes here
DATA_SEEDS = REPORTS / "data_seeds"  # the data-seed study: each (model, data seed, seed) run's scores
SCRATCH = ROOT / "build"  # git-ignored
SCRATCH_RUNS = SCRATCH / "runs"  # where a quick run writes its notebooks, and its findings page beside
# a notebook run directly (papermill, nbval, Jupyter): its default output_dir, build/notebooks/NAME, read from
# the repository root (notebooks.steps.output_folder), not the working directory
NOTEBOOK_OUTPUTS = SCRATCH / "notebooks"
LOGS = SCRATCH / "logs"  # each notebook's kernel and runtime output (kept out of the terminal)
FAILED = SCRATCH / "failed"  # a failed notebook's outputs, to read; never over a complete result
CHECKPOINTS_VARIABLE = "PREDCALC_CHECKPOINTS"  # where run_seeds keeps finished seeds (predcalc run sets it)


def runs_for(profile: str) -> Path:
    """Where ``predcalc run --profile PROFILE`` writes: reports/runs/ for full, build/runs/ otherwise."""
    return RUNS if profile == "full" else SCRATCH_RUNS


def reports_for(profile: str) -> Path:
    """Where ``predcalc report --profile PROFILE`` writes the findings page."""
    return REPORTS if profile == "full" else SCRATCH


def relative(path) -> str:
    """``path`` relative to the repository root when it lies inside it (POSIX form), else as given."""
    path = Path(path)
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def write_if_changed(path, data) -> bool:
    """Write ``data`` (str or bytes) to ``path`` unless the file already holds exactly it.

    Reruns that change nothing then write nothing: no new modification time, no diff. The write
    is atomic (a temporary file beside it, then a rename): an interrupted write leaves the old
    file, never half of the new one. Returns whether the file was written.
    """

    path = Path(path)
    raw = data.encode() if isinstance(data, str) else bytes(data)
    if path.is_file() and path.stat().st_size == len(raw) and path.read_bytes() == raw:
        return False
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(raw)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return True


# Keys of a JSON record that say when or how long, not what: a rerun that changes no number
# changes only these, and the file it would write is the one already there.
TIME_KEYS = ("created", "finished", "date_saved")


def _is_time_key(key) -> bool:
    return key in TIME_KEYS or str(key).endswith("seconds")


def without_times(value):
    """A JSON value without its time keys (:data:`TIME_KEYS` and every ``*seconds``), at any depth."""
    if isinstance(value, dict):
        return {key: without_times(item) for key, item in value.items() if not _is_time_key(key)}
    if isinstance(value, list):
        return [without_times(item) for item in value]
    return value


def _json_text(value) -> str:

    return json.dumps(value, sort_keys=True)  # NaN as NaN: equal records give equal texts


def write_json_if_changed(path, record, indent: int = 1) -> bool:
    """Write ``record`` as JSON unless the file already holds it apart from its time keys (see
    :func:`without_times`): a rerun that changes no number writes no file, and the record keeps
    the time its numbers were first written. Returns whether the file was written."""

    path = Path(path)
    text = json.dumps(record, indent=indent) + "\n"
    if path.is_file():
        try:
            stored = json.loads(path.read_text())
        except ValueError:
            stored = None
        if stored is not None and _json_text(without_times(stored)) == _json_text(without_times(json.loads(text))):
            return False
    return write_if_changed(path, text)


def _keras_contents(path) -> dict:
    """A ``.keras`` file's members (config, weights), its metadata without the date it was saved."""

    with zipfile.ZipFile(path) as archive:
        contents = {name: archive.read(name) for name in archive.namelist()}
    if "metadata.json" in contents:
        contents["metadata.json"] = _json_text(without_times(json.loads(contents["metadata.json"])))
    return contents


def _notebook_contents(path) -> str:
    """An executed notebook's sources and outputs without what changes at every run: metadata
    (papermill's and the kernel's times, widget states) and progress bars' times and rates."""

    notebook = json.loads(Path(path).read_text())
    cells = [{"source": cell.get("source"), "outputs": cell.get("outputs", [])} for cell in notebook.get("cells", [])]
    for cell in cells:
        for output in cell["outputs"]:
            output.pop("metadata", None)
            output.get("data", {}).pop("application/vnd.jupyter.widget-view+json", None)
    text = json.dumps(cells, sort_keys=True)
    return re.sub(r"\d+:\d\d(?::\d\d)?|\d+(?:\.\d+)?\s*(?:it/s|s/it)", "", text)


def same_results(new, old) -> bool:
    """Whether two files hold the same results: the same bytes, or by suffix the same JSON apart
    from its time keys (``.json``), the same config and weights (``.keras``, whose metadata holds
    the save date) or the same sources and outputs (``.ipynb``, apart from times)."""
    new, old = Path(new), Path(old)
    if not old.is_file() or not new.is_file():
        return False
    if new.read_bytes() == old.read_bytes():
        return True
    try:
        if new.suffix == ".json":
            import json

            return _json_text(without_times(json.loads(new.read_text()))) == _json_text(
                without_times(json.loads(old.read_text()))
            )
        if new.suffix == ".keras":
            return _keras_contents(new) == _keras_contents(old)
        if new.suffix == ".ipynb":
            return _notebook_contents(new) == _notebook_contents(old)
    except (ValueError, OSError, KeyError):  # unreadable as its kind: not the same
        return False
    return False


def keep_unchanged(new_dir, old_dir) -> list[str]:
    """Copy each file of ``old_dir`` over its counterpart in ``new_dir`` where both hold the same
    results (:func:`same_results`), bytes and modification time: a rerun into ``new_dir`` that
    then replaces ``old_dir`` changes no file whose numbers it did not change. Returns the
    relative paths kept."""

    new_dir, old_dir = Path(new_dir), Path(old_dir)
    kept = []
    for new in sorted(p for p in new_dir.rglob("*") if p.is_file()):
        relative_path = new.relative_to(new_dir)
        old = old_dir / relative_path
        if old.is_file() and same_results(new, old):
            shutil.copy2(old, new)
            kept.append(relative_path.as_posix())
    return kept


def keras_digest(path) -> str:
    """A SHA-256 of what a ``.keras`` file holds (config and weights, not its save date): equal for
    two saves of one model, so an exporter can tell that the artifacts it wrote from this file
    are still current (a SavedModel's bytes change at every export, even from the same weights)."""

    digest = hashlib.sha256()
    for name, content in sorted(_keras_contents(path).items()):
        digest.update(name.encode() + b"\0" + (content.encode() if isinstance(content, str) else content) + b"\0")
    return digest.hexdigest()


def save_keras_if_changed(model, path) -> bool:
    """``model.save(path)`` unless the file there holds the same model (config and weights; the
    save date in a ``.keras`` file changes its bytes at every save). Returns whether it wrote."""

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".keras", dir=path.parent)
    os.close(descriptor)
    try:
        model.save(temporary)
        if path.is_file() and same_results(temporary, path):
            return False
        os.replace(temporary, path)
        return True
    finally:
        Path(temporary).unlink(missing_ok=True)


def replace_between(path, start: str, end: str, text: str) -> bool:
    """Put ``text`` between the ``start`` and ``end`` marker lines of a text file (a generated part of
    the README); False, and nothing written, where a marker is missing."""
    path = Path(path)
    content = path.read_text()
    if start not in content or end not in content.split(start, 1)[1]:
        return False
    head, rest = content.split(start, 1)
    tail = rest.split(end, 1)[1]
    write_if_changed(path, f"{head}{start}\n{text.strip()}\n{end}{tail}")
    return True


def compact_png(raw: bytes) -> bytes:
    """A plot's PNG re-encoded with a palette of at most 256 colours, optimised: about a third of
    the bytes and the same to the eye (a plot has few colours). Deterministic; returns ``raw``
    where that is not smaller."""
    from PIL import Image  # paths.py stays free of third-party imports (the runtime install reads it)

    image = Image.open(io.BytesIO(raw))
    if image.mode == "P":
        return raw
    buffer = io.BytesIO()
    image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(buffer, "PNG", optimize=True)
    return buffer.getvalue() if buffer.tell() < len(raw) else raw


def compact_notebook_images(path) -> bool:
    """:func:`compact_png` on every PNG output of an executed notebook; returns whether it changed."""
    import nbformat  # paths.py stays free of third-party imports (the runtime install reads it)

    path = Path(path)
    notebook = nbformat.read(path, as_version=4)
    changed = False
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" in data:
                raw = base64.b64decode(data["image/png"])
                compact = compact_png(raw)
                if compact is not raw:
                    data["image/png"] = base64.b64encode(compact).decode()
                    changed = True
    if changed:
        text = nbformat.writes(notebook)
        write_if_changed(path, text if text.endswith("\n") else text + "\n")
    return changed


def save_figure(figure, path, dpi: int = 110) -> bool:
    """``figure.savefig`` through :func:`write_if_changed` (the format from the file's suffix; a PNG
    through :func:`compact_png`)."""

    buffer = io.BytesIO()
    suffix = Path(path).suffix.lstrip(".") or "png"
    figure.savefig(buffer, format=suffix, dpi=dpi)
    raw = buffer.getvalue()
    return write_if_changed(path, compact_png(raw) if suffix == "png" else raw)
