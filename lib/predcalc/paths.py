"""Where the repository's folders are: the one place that knows the layout on disk.

Light on purpose (no third-party import): the deploy runtimes and the command line read it
on a Jetson without Keras or TensorFlow.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # lib/predcalc/paths.py -> the repository
NOTEBOOKS = ROOT / "notebooks"
REPORTS = ROOT / "reports"
RUNS = REPORTS / "runs"  # the committed results: only a full run (``--profile full``) writes here
SCRATCH = ROOT / "build"  # git-ignored
SCRATCH_RUNS = SCRATCH / "runs"  # where a quick run writes its notebooks, and its findings page beside
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
    import os
    import tempfile

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
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(raw))
    if image.mode == "P":
        return raw
    buffer = io.BytesIO()
    image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(buffer, "PNG", optimize=True)
    return buffer.getvalue() if buffer.tell() < len(raw) else raw


def compact_notebook_images(path) -> bool:
    """:func:`compact_png` on every PNG output of an executed notebook; returns whether it changed."""
    import base64

    import nbformat

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
    import io

    buffer = io.BytesIO()
    suffix = Path(path).suffix.lstrip(".") or "png"
    figure.savefig(buffer, format=suffix, dpi=dpi)
    raw = buffer.getvalue()
    return write_if_changed(path, compact_png(raw) if suffix == "png" else raw)
