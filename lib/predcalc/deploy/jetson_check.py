"""The Jetson path checked on aarch64 under emulation (``make jetson-check``, issue 35).

On an x86-64 Debian or Ubuntu machine with root: an arm64 Debian root (debootstrap, run by
qemu-user; built once and cached, by default in ``~/.cache/predcalc/arm64-root``), the pinned
aarch64 wheels of the ``runtime`` extra downloaded on the host (pip inside the root cannot verify
the index's certificate) and installed offline into a fresh virtual environment there with this
working tree's ``.[runtime]``, as the README's Jetson guide does. Then ``predcalc predict`` and
``predcalc evaluate`` on the learned calculator and on every LiteRT and ONNX file of the
recommended exports (``reports/recommended.json``, :func:`predcalc.recommended.exports`), inside the root and
with this machine's full install, on the same files and inputs; ``reports/jetson_check.json``
records the architecture seen inside, the versions, each artifact's agreement and the wall times
(emulated: not a latency on a Jetson). The pins for Python 3.10 (JetPack 6) are only downloaded
for aarch64, not run: the Debian root's Python is 3.11.

A format in :data:`NOT_RECOMMENDED_FORMATS` (dynamic-range int8) is run and recorded like the rest,
with the differing answers and a second run on LiteRT's builtin kernels, but it is not a
recommended Jetson artifact: it does not decide the check's outcome, and the record and the README
list it apart, with its numbers.

Runs as ``python -m predcalc.deploy.jetson_check`` on the host; inside the root the same module
(``... values``) prints each artifact's raw answers. Stdlib only at import time: the root has
NumPy and the runtimes, nothing else.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SUITE = "bookworm"  # Debian 12: Python 3.11 (JetPack 6 is Ubuntu 22.04: Python 3.10, glibc 2.35)
ROOT_PACKAGES = ("python3", "python3-venv", "python3-pip")
ROOT_MARKER = ".predcalc-arm64-root"  # written when debootstrap finished
HOST_TOOLS = {
    "debootstrap": "debootstrap",
    "qemu-aarch64-static": "qemu-user-static",
    "update-binfmts": "binfmt-support",
}
JETPACK6 = {"python": "3.10", "glibc": (2, 35)}  # the pins for Python < 3.11 are downloaded for this
RUNTIME_PACKAGES = ("numpy", "ai-edge-litert", "onnxruntime")
HEAVY = ("tensorflow", "keras", "scipy", "jax", "jaxlib", "torch", "pandas")
VENV = "/opt/predcalc-rt"  # inside the root
JETPACK6_VENV = "/opt/predcalc-rt-jetpack6"  # the Python 3.10 pins' versions, on the root's Python
WORK = "tmp/predcalc-check"  # inside the root, new each run: the copied source and the inputs
WHEELS = "var/cache/predcalc-wheels"  # inside the root, kept: the downloaded aarch64 wheels
PREDICT_EXPRESSION = "3 - -2 + 4"
# The learned calculator also reads long numbers, fractions and nesting the value models cannot.
CALCULATOR_EXPRESSIONS = (
    "123456789 * 987654321",
    "99999999999999999999 + 1",
    "(7 - 3) / 6",
    "2 / 3 + 1 / 6",
    "-15 * (4 - 9) - 100",
    "((1 + 2) * (3 - 4)) / 5",
)
SEED_TEST_SETS = {"test_in": 100, "test_out": 100, "test_long": 100}  # the seed protocol's (data seed 0)
OUTPUT = "jetson_check.json"
README_START, README_END = "<!-- jetson-check:start -->", "<!-- jetson-check:end -->"
# qemu-user (7.2, Debian 12) shows the x86-64 host's /proc/cpuinfo to the emulated program, and the
# cpuinfo library inside ONNX Runtime (>= 1.28) and LiteRT's XNNPACK crashes on it (SIGSEGV); ONNX
# Runtime 1.27 only warns. A real aarch64 kernel shows ARM's fields: the check mounts such a file,
# describing the emulated cores. Those are qemu's Cortex-A76 (QEMU_CPU), the closest it has to a
# Jetson Orin's Cortex-A78AE (both ARMv8.2-A with dot product and FP16, no SVE or int8 matrix
# multiply): qemu's default CPU, "max", has those too, and LiteRT's full-integer int8 kernels then
# answer differently (the check records it).
QEMU_CPU = "cortex-a76"
ARM_CPU = {
    "CPU implementer": "0x41",
    "CPU architecture": "8",
    "CPU variant": "0x4",
    "CPU part": "0xd0b",
    "CPU revision": "1",
}
ARM_FEATURES = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp"
CPUINFO = "etc/predcalc-aarch64-cpuinfo"  # inside the root, mounted over /proc/cpuinfo
EMULATION_NOTE = (
    "aarch64 wall times are qemu-user emulation on an x86-64 host (whole commands: Python "
    "start-up, imports, loading, every expression): not a latency on a Jetson. x86-64 times are "
    "the full install's on the same shared machine"
)


# Checked on aarch64 but not recommended for the Jetson: LiteRT formats whose answers depend on the
# CPU that runs the file. A dynamic-range int8 file holds int8 weights and float activations, and
# the runtime quantises the activations while it runs; LiteRT's default delegate, XNNPACK, does so in
# kernels of its own for each architecture. Measured by this check on fnn2's file (the record's
# "builtin_kernels"): with the builtin kernels (XNNPACK off) x86-64 and aarch64 give the same raw
# predictions to float32 noise; with XNNPACK most raw predictions differ, by far more than a
# rounding tie, and so do a few answers. The export's parity against Keras (export.json: "use") was
# measured on x86-64 only and says nothing about the Jetson's cores, so the Jetson guide recommends
# the float32, float16 and full-integer int8 files (fixed arithmetic, the same answers here) and ONNX.
NOT_RECOMMENDED_FORMATS = {
    "int8_dynamic": "dynamic-range int8: the runtime quantises activations in the CPU's own kernels "
    "(XNNPACK's differ between x86-64 and aarch64), so the export's parity against Keras, measured "
    "on x86-64, does not carry over to the Jetson",
}
DIFFERING_SHOWN = 20  # differing answers listed per artifact (the count is always complete)


class CheckError(RuntimeError):
    """A step of the check failed; the message is one line, the log holds the detail."""


# -- what is checked -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Artifact:
    """One file to run: ``skipped`` holds the reason where it cannot be, ``not_recommended`` why it is
    run and recorded but not recommended for the Jetson (:data:`NOT_RECOMMENDED_FORMATS`)."""

    name: str  # e.g. "fnn2/model_float32.tflite"
    path: Path
    runtime: str  # "LiteRT" or "ONNX Runtime"
    note: str
    skipped: str | None = None
    not_recommended: str | None = None

    @property
    def calculator(self) -> bool:
        return self.name.startswith("calculator/")


def runtime_of(path: Path) -> str:
    return "ONNX Runtime" if path.suffix == ".onnx" else "LiteRT"


def recommended_artifacts(
    runs: Path | None = None, calculator: Path | None = None, exports: dict | None = None
) -> list[Artifact]:
    """The calculator, then each recommended export's float32 LiteRT and ONNX files (skipped, with
    the reason, where absent) and the quantised LiteRT files its export kept (marked ``use``); those
    of :data:`NOT_RECOMMENDED_FORMATS` carry the reason they are not recommended for the Jetson."""
    from predcalc.deploy.export import (  # lazy: this module also runs inside the arm64 root, stdlib only
        LITERT_FORMATS,
        ONNX_FILE,
        artifact_path,
    )
    from predcalc.deploy.predictor import CALCULATOR_MODEL
    from predcalc.paths import RUNS, relative
    from predcalc.recommended import exports as recommended_exports

    runs = RUNS if runs is None else Path(runs)
    calculator = CALCULATOR_MODEL if calculator is None else Path(calculator)
    exports = recommended_exports() if exports is None else exports

    def one(name, path, note, hint, fmt=None):
        absent = None if path.is_file() else f"no file {relative(path)} ({hint})"
        return Artifact(name, path, runtime_of(path), note, absent, NOT_RECOMMENDED_FORMATS.get(fmt))

    found = [
        one(f"calculator/{calculator.name}", calculator, "the learned calculator", "the calculator notebook exports it")
    ]
    for folder, note in exports.items():
        directory = runs / folder
        model = directory.name
        hint = f"`predcalc export {relative(directory / 'model.keras')}` writes it"
        found.append(one(f"{model}/model_float32.tflite", artifact_path(directory, "float32"), note, hint))
        found += [
            one(f"{model}/{artifact_path(directory, fmt).name}", artifact_path(directory, fmt), note, hint, fmt)
            for fmt in LITERT_FORMATS[1:]
            if artifact_path(directory, fmt).is_file()
        ]
        found.append(one(f"{model}/{ONNX_FILE}", directory / ONNX_FILE, note, hint))
    return found


def input_lines(data_seed: int = 0) -> dict[str, list[str]]:
    """The fixed inputs: the first expressions of the seed protocol's test sets (every artifact),
    and those plus :data:`CALCULATOR_EXPRESSIONS` (the calculator). Expressions only: the exact
    answers are computed by ``predcalc evaluate``."""
    from predcalc.data import seed_protocol  # lazy: this module also runs inside the arm64 root, stdlib only

    protocol = seed_protocol(data_seed)
    seed = [e for split, count in SEED_TEST_SETS.items() for e in getattr(protocol, split).expressions[:count]]
    return {"seed": seed, "calculator": seed + list(CALCULATOR_EXPRESSIONS)}


# -- the pins --------------------------------------------------------------------------------------


def runtime_requirements(python_version: str, pyproject: Path | None = None) -> list[str]:
    """The ``runtime`` extra's requirements whose marker holds for ``python_version`` on aarch64 Linux."""
    import tomllib  # lazy: this module also runs inside the arm64 root, stdlib only
    from packaging.requirements import Requirement

    from predcalc.paths import ROOT

    data = tomllib.loads(Path(pyproject or ROOT / "pyproject.toml").read_text())
    environment = {
        "python_version": python_version,
        "python_full_version": f"{python_version}.0",
        "platform_machine": "aarch64",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }
    chosen = []
    for line in data["project"]["optional-dependencies"]["runtime"]:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(environment):
            chosen.append(str(requirement).split(";")[0].strip())
    return chosen


def manylinux_platforms(glibc: tuple[int, int]) -> list[str]:
    """The aarch64 wheel platforms a glibc of this version runs (manylinux2014 is glibc 2.17)."""
    major, minor = glibc
    return [f"manylinux_{major}_{m}_aarch64" for m in range(minor, 16, -1)] + ["manylinux2014_aarch64"]


def download_wheels(requirements, python_version: str, platforms, directory: Path, log) -> list[dict]:
    """Download each pin's aarch64 wheel (``--no-deps``: does this version have one?), then all of
    them with their dependencies into ``directory``; one record per pin (``wheel`` or ``error``)."""
    base = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--disable-pip-version-check",
        "--only-binary=:all:",
        "--python-version",
        python_version,
        "--implementation",
        "cp",
        *[a for p in platforms for a in ("--platform", p)],
    ]
    directory.mkdir(parents=True, exist_ok=True)
    records = []
    for requirement in requirements:
        pinned = directory / "pins" / requirement.replace("=", "_").replace(" ", "")
        pinned.mkdir(parents=True, exist_ok=True)
        result = _run([*base, "--no-deps", "-d", str(pinned), requirement], log)
        wheels = sorted(p.name for p in pinned.glob("*.whl"))
        record = {"requirement": requirement, "python": python_version}
        if result.returncode == 0 and wheels:
            record["wheel"] = wheels[0]
        else:
            record["error"] = f"no aarch64 wheel for Python {python_version}: " + _last_line(result.stderr)
        records.append(record)
    if all("wheel" in r for r in records):
        result = _run([*base, "-d", str(directory), *requirements], log)
        if result.returncode != 0:  # each pin has a wheel, but they do not resolve together
            for record in records:
                record["error"] = f"the pins do not resolve together: {_last_line(result.stderr)}"
    return records


# -- comparing -------------------------------------------------------------------------------------


def compare_values(arm: list, host: list) -> dict:
    """Raw predictions of the two installs: how many are bitwise the same and the largest |difference|
    (NaN on both sides counts as the same; NaN on one side makes the difference infinite)."""
    if len(arm) != len(host):
        raise ValueError(f"{len(arm)} aarch64 values against {len(host)} x86-64 values")
    identical, largest = 0, 0.0
    for a, h in zip(arm, host):
        a, h = float(a), float(h)
        if a == h or (math.isnan(a) and math.isnan(h)):
            identical += 1
        else:
            largest = max(largest, math.inf if math.isnan(a) or math.isnan(h) else abs(a - h))
    return {"n": len(arm), "identical": identical, "max_abs_diff": largest}


def compare_predict(arm: str, host: str, tolerance: float | None) -> dict:
    """Two ``predcalc predict`` lines: ``same`` text, and ``agree``: the same apart from the printed
    value, which differs by at most ``tolerance`` (a value model's float32 noise)."""
    arm, host = arm.strip(), host.strip()
    record = {"aarch64": arm, "x86_64": host, "same": arm == host}
    values = [PREDICTED_VALUE.search(line) for line in (arm, host)]
    close = (
        tolerance is not None
        and all(values)
        and abs(float(values[0].group(1)) - float(values[1].group(1))) <= tolerance
        and PREDICTED_VALUE.sub("= # ", arm) == PREDICTED_VALUE.sub("= # ", host)
    )
    record["agree"] = record["same"] or close
    return record


def compare_answers(arm: list[str], host: list[str]) -> dict:
    """The answers ``predcalc evaluate --output`` wrote (texts): how many are the same."""
    if len(arm) != len(host):
        raise ValueError(f"{len(arm)} aarch64 answers against {len(host)} x86-64 answers")
    return {"n": len(arm), "identical": sum(a == h for a, h in zip(arm, host))}


PREDICTED_VALUE = re.compile(r"= (-?\d+\.\d+) ")  # the value in a value model's `predcalc predict` line
PROBE_CPUS = {"max": "qemu's default: SVE and int8 matrix multiply, which the Orin's cores lack"}  # int8 files there
METRIC_KEYS = ("n", "exact", "lowest_terms", "mae")
EXACT_KEYS = ("n", "exact", "lowest_terms")  # equal on both sides; the MAE follows the raw values


def artifact_record(artifact: Artifact, arm: dict, host: dict) -> dict:
    """One artifact's entry: what each install printed and computed, and whether they agree.

    ``arm`` and ``host`` hold ``predict`` (stdout), ``evaluate`` (its JSON metrics), ``answers``
    (the texts of ``--output``) with ``expressions`` (its first column), ``values`` (raw
    predictions, value models only), ``values_builtin`` (the same on LiteRT's builtin kernels, for
    a LiteRT file not recommended), ``stderr`` (what the commands wrote there) and ``wall_s`` (per
    command), or ``error`` where a command failed.
    """
    head = {
        "name": artifact.name,
        "file": _relative(artifact.path),
        "sha256": file_digest(artifact.path),
        "runtime": artifact.runtime,
        "note": artifact.note,
        "recommended": artifact.not_recommended is None,
        **({"not_recommended": artifact.not_recommended} if artifact.not_recommended else {}),
    }
    if "error" in arm or "error" in host:
        return {
            **head,
            "agree": False,
            "error": {side: run["error"] for side, run in (("aarch64", arm), ("x86_64", host)) if "error" in run},
        }
    metrics = {
        side: {k: run["evaluate"][k] for k in METRIC_KEYS if k in run["evaluate"]}
        for side, run in (("aarch64", arm), ("x86_64", host))
    }
    record = {**head, "evaluate": metrics, "answers": compare_answers(arm["answers"], host["answers"])}
    if arm.get("values") is not None:
        from predcalc.deploy.export import PARITY_RELATIVE_DIFF

        record["values"] = compare_values(arm["values"], host["values"])
        finite = [abs(v) for v in host["values"] if math.isfinite(v)]
        tolerance = PARITY_RELATIVE_DIFF * max([1.0, *finite])  # export's float32 parity: last bits differ
        record["values"].update(tolerance=tolerance, within=record["values"]["max_abs_diff"] <= tolerance)
    differ = differing_answers(arm, host)
    if differ:
        record["answers"]["differ"] = differ[:DIFFERING_SHOWN]
    if arm.get("values_builtin") is not None and host.get("values_builtin") is not None:
        record["builtin_kernels"] = {
            "what": "raw predictions on LiteRT's builtin kernels (its default XNNPACK delegate off), "
            "on both sides, and how far XNNPACK moves each side's",
            "x86_64_vs_aarch64": compare_values(arm["values_builtin"], host["values_builtin"]),
            "xnnpack_vs_builtin_max_abs_diff": {
                side: compare_values(run["values"], run["values_builtin"])["max_abs_diff"]
                for side, run in (("aarch64", arm), ("x86_64", host))
            },
        }
    record["predict"] = compare_predict(arm["predict"], host["predict"], record.get("values", {}).get("tolerance"))
    record["evaluate"]["same"] = all(metrics["aarch64"].get(k) == metrics["x86_64"].get(k) for k in EXACT_KEYS)
    record["evaluate"]["exact_change"] = metrics["aarch64"]["exact"] - metrics["x86_64"]["exact"]
    record["agree"] = (
        record["predict"]["agree"]
        and record["evaluate"]["same"]
        and record["answers"]["identical"] == record["answers"]["n"]
        and record.get("values", {}).get("within", True)
    )
    record["stderr_aarch64"] = arm.get("stderr", "")
    record["wall_s"] = {"aarch64_emulated": arm["wall_s"], "x86_64": host["wall_s"]}
    return record


def differing_answers(arm: dict, host: dict) -> list[dict]:
    """Each answer the two sides wrote differently: the expression, both answers and, for a value
    model, both raw predictions and how far apart they are (a rounding tie would be ~1e-6 apart)."""
    expressions = arm.get("expressions") or [None] * len(arm["answers"])
    found = []
    for i, (expression, a, h) in enumerate(zip(expressions, arm["answers"], host["answers"], strict=True)):
        if a == h:
            continue
        entry = {"expression": expression, "answer_aarch64": a, "answer_x86_64": h}
        if arm.get("values") is not None and host.get("values") is not None:
            entry.update(value_aarch64=arm["values"][i], value_x86_64=host["values"][i])
            entry["value_diff"] = abs(arm["values"][i] - host["values"][i])
        found.append(entry)
    return found


def summary(artifacts: list[dict], skipped: list[dict]) -> dict:
    """The recommended artifacts (they decide the outcome): how many were run and agree, the largest
    raw difference among those that agree, how the others differ, which were skipped; then those
    run but not recommended (``not_recommended``), with how they differ."""
    recommended = [a for a in artifacts if a.get("recommended", True)]
    diffs = [a["values"]["max_abs_diff"] for a in recommended if "values" in a and a["agree"]]
    return {
        "checked": len(recommended),
        "agree": sum(a["agree"] for a in recommended),
        "disagree": [_difference(a) for a in recommended if not a["agree"] and "error" not in a],
        "failed": [a["name"] for a in recommended if "error" in a],
        "answers_identical": sum(a["answers"]["identical"] for a in recommended if "answers" in a),
        "answers": sum(a["answers"]["n"] for a in recommended if "answers" in a),
        "max_abs_diff_agreeing": max(diffs) if diffs else None,
        "skipped": [s["name"] for s in skipped],
        "not_recommended": [
            {**_difference(a), "reason": a["not_recommended"], "agree": a["agree"]}
            for a in artifacts
            if not a.get("recommended", True)
        ],
    }


def _difference(artifact: dict) -> dict:
    """How one artifact's two sides differ, in numbers (its name only where a command failed)."""
    if "error" in artifact:
        return {"name": artifact["name"], "error": artifact["error"]}
    found = {
        "name": artifact["name"],
        "answers_differ": artifact["answers"]["n"] - artifact["answers"]["identical"],
        "n": artifact["answers"]["n"],
        "exact_aarch64": artifact["evaluate"]["aarch64"]["exact"],
        "exact_x86_64": artifact["evaluate"]["x86_64"]["exact"],
    }
    if "values" in artifact:
        values = artifact["values"]
        found.update(
            values_differ=values["n"] - values["identical"],
            max_abs_diff=values["max_abs_diff"],
            tolerance=values["tolerance"],
        )
        gaps = [d["value_diff"] for d in artifact["answers"].get("differ", []) if "value_diff" in d]
        if gaps:
            found["value_diff_where_answers_differ"] = [min(gaps), max(gaps)]
    if "builtin_kernels" in artifact:
        kernels = artifact["builtin_kernels"]
        found["builtin_kernels"] = {
            "values_differ": kernels["x86_64_vs_aarch64"]["n"] - kernels["x86_64_vs_aarch64"]["identical"],
            "max_abs_diff": kernels["x86_64_vs_aarch64"]["max_abs_diff"],
            "xnnpack_vs_builtin_max_abs_diff": kernels["xnnpack_vs_builtin_max_abs_diff"],
        }
    return found


def result_lines(record: dict) -> list[str]:
    """The check's result in a few sentences (the README's Jetson section quotes them)."""
    arm, total = record["aarch64"], record["summary"]
    lines = [
        f"`uname -m` inside the root: `{arm['uname_m']}`; Debian {record['root']['suite']}'s Python "
        f"{arm['python']}; installed from the runtime extra: "
        + ", ".join(f"{name} {version}" for name, version in arm["runtime_packages"].items())
        + "."
    ]
    lines.append(
        f"{total['agree']} of {total['checked']} recommended artifacts give the same answers as the x86-64 "
        f"full install ({total['answers_identical']:,} of {total['answers']:,} answers identical in all"
        + (
            f"; among those that agree, raw predictions differ by at most {total['max_abs_diff_agreeing']:.2g}"
            if total["max_abs_diff_agreeing"] is not None
            else ""
        )
        + ")."
    )
    for other in total["disagree"]:
        lines.append(
            f"`{other['name']}` differs: {other['answers_differ']} of {other['n']} answers, exact "
            f"accuracy {100 * other['exact_aarch64']:.1f} % on aarch64 against "
            f"{100 * other['exact_x86_64']:.1f} % on x86-64."
        )
    if total["failed"]:
        lines.append("Failed to run: " + ", ".join(total["failed"]) + ".")
    if total["skipped"]:
        lines.append("Skipped (no file): " + ", ".join(total["skipped"]) + ".")
    for other in total.get("not_recommended", []):
        lines.append(_not_recommended_line(other))
    times = [a["wall_s"]["aarch64_emulated"]["predict"] for a in record.get("artifacts", []) if "wall_s" in a]
    if times:
        lines.append(
            f"A whole `predcalc predict` command took {min(times):.0f} to {max(times):.0f} s under "
            "emulation (qemu-user on the shared x86-64 machine: not a latency on a Jetson)."
        )
    jetpack6 = record.get("aarch64_jetpack6_versions")
    compared = [a for a in record.get("artifacts", []) if "jetpack6_versions" in a and a.get("recommended", True)]
    if jetpack6 and compared:
        versions = ", ".join(f"{n} {v}" for n, v in jetpack6["runtime_packages"].items())
        differ = [a["name"] for a in compared if not a["jetpack6_versions"].get("agree", True)]
        others = [a for a in record.get("artifacts", []) if "jetpack6_versions" in a and not a.get("recommended", True)]
        lines.append(
            f"With the versions JetPack 6's Python {JETPACK6['python']} pins install ({versions}), on the "
            f"root's Python {arm['python']}: {sum(a['jetpack6_versions']['agree'] for a in compared)} of "
            f"{len(compared)} recommended artifacts give the same answers as x86-64"
            + (f" (not: {', '.join(f'`{name}`' for name in differ)})" if differ else "")
            + "".join(
                f"; `{a['name']}` (not recommended) "
                + ("also agrees" if a["jetpack6_versions"].get("agree") else _answers_differ(a["jetpack6_versions"]))
                for a in others
            )
            + "."
        )
    elif jetpack6 and jetpack6.get("skipped"):
        lines.append(f"JetPack 6's versions were not run: {jetpack6['skipped']}.")
    elif "aarch64_jetpack6_versions" in record and jetpack6 is None:
        lines.append(
            f"This run did not install the versions JetPack 6's Python {JETPACK6['python']} pins give "
            "(`make jetson-check` installs and compares them too)."
        )
    bare = record.get("emulation", {}).get("without_it")
    if bare:
        outcome = f"died with {bare['signal']}" if bare["signal"] else f"exited with {bare['rc']}"
        lines.append(
            f"With the x86-64 `/proc/cpuinfo` that qemu-user passes through, `{bare['command']}` {outcome} "
            "inside the root; the check mounts an aarch64 one."
        )
    for probe in record.get("emulation", {}).get("other_cpus", []):
        verdict = "as on x86-64" if probe["same_as_x86_64"] else "unlike x86-64"
        outcome = (
            f"printed `{probe['predict']}`, {verdict}"
            if probe.get("rc", 0) == 0
            else f"died with {probe.get('signal') or probe['rc']}"
        )
        lines.append(
            f"On qemu's `{probe['cpu']}` ({PROBE_CPUS.get(probe['cpu'], 'another CPU')}) `{probe['name']}` {outcome}."
        )
    bad = [p for p in record["pins"] if "error" in p]
    if bad:
        lines.append(
            "Pins without an aarch64 wheel: "
            + "; ".join(f"{p['requirement']} (Python {p['python']}): {p['error']}" for p in bad)
            + "."
        )
    else:
        lines.append(
            f"Every pin has its aarch64 wheel: the Python {arm['python_minor']} ones installed and ran; "
            f"the Python {JETPACK6['python']} ones (JetPack 6: wheels for glibc "
            f"{'.'.join(map(str, JETPACK6['glibc']))}) download and resolve together, but no Python "
            f"{JETPACK6['python']} ran them here."
        )
    return lines


def _answers_differ(comparison: dict) -> str:
    answers = comparison.get("answers")
    if not answers:
        return "failed to run"
    return f"differs on {answers['n'] - answers['identical']} of {answers['n']} answers"


def _not_recommended_line(other: dict) -> str:
    """One sentence on an artifact run but not recommended: the reason and how its sides differ."""
    line = f"Checked, not recommended for the Jetson: `{other['name']}` ({other['reason']})"
    if "error" in other:
        return line + ": it failed to run."
    if other["agree"]:
        return line + f": the same answers on both ({other['n'] - other['answers_differ']} of {other['n']})."
    line += (
        f": {other['answers_differ']} of {other['n']} answers differ (exact accuracy "
        f"{100 * other['exact_aarch64']:.1f} % on aarch64 against {100 * other['exact_x86_64']:.1f} % on x86-64)"
    )
    if "values_differ" in other:
        line += f"; its raw predictions differ on {other['values_differ']} of {other['n']} by up to {other['max_abs_diff']:.2g}"
        if "value_diff_where_answers_differ" in other:
            low, high = other["value_diff_where_answers_differ"]
            tie = high <= other["tolerance"]  # float32 noise across an answer's rounding boundary
            line += f", by {low:.2g} to {high:.2g} where the answers differ (" + (
                "float32 noise at a rounding boundary)"
                if tie
                else f"more than the float32 parity tolerance {other['tolerance']:.2g}: not a rounding tie)"
            )
    kernels = other.get("builtin_kernels")
    if kernels:
        moved = kernels["xnnpack_vs_builtin_max_abs_diff"]
        line += (
            f"; on LiteRT's builtin kernels (XNNPACK off) x86-64 and aarch64 differ by at most "
            f"{kernels['max_abs_diff']:.2g}, and XNNPACK moves the raw predictions by up to "
            f"{moved['x86_64']:.2g} on x86-64 and {moved['aarch64']:.2g} on aarch64"
        )
    return line + "."


def update_readme(record: dict, readme: Path | None = None) -> bool:
    """The README's Jetson section quotes the last result (between its jetson-check markers)."""
    from predcalc.paths import ROOT, replace_between  # lazy: this module also runs inside the arm64 root, stdlib only

    text = "\n".join(f"- {line}" for line in record["result"])
    return replace_between(readme or ROOT / "README.md", README_START, README_END, text)


# -- running ---------------------------------------------------------------------------------------


def file_digest(path: Path) -> str | None:
    """The SHA-256 of a file, so a record says which bytes were checked (the artifacts are re-exported);
    None where there is no file."""
    path = Path(path)
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def _relative(path) -> str:
    from predcalc.paths import relative  # lazy: this module also runs inside the arm64 root, stdlib only

    return relative(path)


def _signal_name(returncode: int) -> str | None:
    """SIGSEGV for -11: what killed a command (None where it exited)."""
    import signal  # lazy: this module also runs inside the arm64 root, stdlib only

    return signal.Signals(-returncode).name if returncode < 0 else None


def _last_line(text: str) -> str:
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _run(command, log, **kwargs) -> subprocess.CompletedProcess:
    """A command with its output captured (and appended to the log), never on the terminal."""
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, **kwargs)
    log.write(f"$ {' '.join(map(str, command))}\n[rc {result.returncode}]\n{result.stdout}{result.stderr}\n")
    log.flush()
    return result


def _must(result: subprocess.CompletedProcess, what: str, log_path: Path) -> subprocess.CompletedProcess:
    if result.returncode != 0:
        raise CheckError(f"{what} failed ({_last_line(result.stderr or result.stdout)}); see {log_path}")
    return result


class Root:
    """The arm64 Debian root: built once, then entered with chroot (qemu-user runs its binaries)."""

    def __init__(self, path: Path, repository: Path, log, log_path: Path):
        self.path, self.repository, self.log, self.log_path = Path(path), Path(repository), log, log_path

    @property
    def ready(self) -> bool:
        return (self.path / ROOT_MARKER).is_file()

    def prepare_host(self) -> None:
        """The host's qemu-user, binfmt and debootstrap (installed with apt-get where missing)."""
        if platform.machine() == "aarch64":
            return
        missing = sorted({package for tool, package in HOST_TOOLS.items() if not shutil.which(tool)})
        if missing:
            if os.geteuid() != 0:
                raise CheckError(f"needs root to install {' '.join(missing)} (run it with sudo)")
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            _must(_run(["apt-get", "update", "-q"], self.log, env=env), "apt-get update", self.log_path)
            _must(
                _run(["apt-get", "install", "-y", "-q", *missing], self.log, env=env),
                f"apt-get install {' '.join(missing)}",
                self.log_path,
            )
        binfmt = Path("/proc/sys/fs/binfmt_misc")
        if not (binfmt / "status").exists():
            _must(
                _run(["mount", "-t", "binfmt_misc", "binfmt_misc", binfmt], self.log),
                "mounting binfmt_misc",
                self.log_path,
            )
        _must(_run(["update-binfmts", "--enable", "qemu-aarch64"], self.log), "update-binfmts", self.log_path)

    def build(self) -> None:
        """debootstrap into a temporary folder, renamed into place when complete (a few minutes)."""
        partial = self.path.with_name(self.path.name + ".partial")
        if partial.exists():
            shutil.rmtree(partial)
        partial.parent.mkdir(parents=True, exist_ok=True)
        _must(
            _run(
                [
                    "debootstrap",
                    "--arch=arm64",
                    "--variant=minbase",
                    f"--include={','.join(ROOT_PACKAGES)}",
                    SUITE,
                    partial,
                    "http://deb.debian.org/debian",
                ],
                self.log,
            ),
            f"debootstrap of Debian {SUITE} arm64",
            self.log_path,
        )
        (partial / ROOT_MARKER).write_text(json.dumps({"suite": SUITE, "packages": ROOT_PACKAGES}) + "\n")
        partial.rename(self.path)

    @contextlib.contextmanager
    def locked(self):
        """The root to this check alone (an exclusive lock on a file beside it; waits for another)."""
        import fcntl  # lazy: this module also runs inside the arm64 root, stdlib only

        lock = self.path.with_name(self.path.name + ".lock")
        lock.parent.mkdir(parents=True, exist_ok=True)
        with open(lock, "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield self
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def mounted(self, arm_cpuinfo: bool = True):
        """/proc, /sys and /dev inside (ONNX Runtime reads the CPU from them), with an aarch64
        /proc/cpuinfo (:func:`arm_cpuinfo`) unless ``arm_cpuinfo`` is false, and this repository,
        read-only, at the same path, so both installs read the same files by the same names."""
        cpuinfo = self.inside(CPUINFO)
        cpuinfo.write_text(arm_cpuinfo_text(os.cpu_count() or 1))
        mounts = [
            (["-t", "proc", "proc"], Path("proc")),
            (["--bind", "/sys"], Path("sys")),
            (["--bind", "/dev"], Path("dev")),
            (["--bind", self.repository], self.repository.relative_to("/")),
        ]
        if arm_cpuinfo:
            mounts.insert(1, (["--bind", cpuinfo], Path("proc/cpuinfo")))
        done = []
        try:
            for options, target in mounts:
                where = self.path / target
                if target != Path("proc/cpuinfo"):
                    where.mkdir(parents=True, exist_ok=True)
                    if os.path.ismount(where):
                        continue
                _must(_run(["mount", *options, where], self.log), f"mounting {where}", self.log_path)
                done.append(where)
                if target == self.repository.relative_to("/"):
                    _must(
                        _run(["mount", "-o", "remount,bind,ro", where], self.log),
                        f"making {where} read-only",
                        self.log_path,
                    )
            yield self
        finally:
            for where in reversed(done):
                if _run(["umount", where], self.log).returncode != 0:
                    _run(["umount", "-l", where], self.log)

    def run(
        self, command, what: str | None = None, cwd: Path | None = None, cpu: str = QEMU_CPU
    ) -> subprocess.CompletedProcess:
        """``command`` inside the root, in ``cwd`` (default the repository), with a clean environment, on
        qemu's ``cpu``."""
        env = [
            "env",
            "-i",
            f"PATH={VENV}/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME=/root",
            "LANG=C.UTF-8",
            "TF_CPP_MIN_LOG_LEVEL=3",
            f"QEMU_CPU={cpu}",
        ]
        script = 'cd "$1" && shift && exec "$@"'
        command = [self.translate(c) for c in command]
        result = _run(["chroot", self.path, *env, "sh", "-c", script, "sh", cwd or self.repository, *command], self.log)
        return _must(result, what, self.log_path) if what else result

    def inside(self, path: str) -> Path:
        """The host's path of ``path`` inside the root."""
        return self.path / path.lstrip("/")

    def translate(self, argument):
        """A host path under the root as the root sees it; anything else unchanged."""
        if isinstance(argument, Path) and argument.is_relative_to(self.path):
            return "/" + argument.relative_to(self.path).as_posix()
        return argument


def arm_cpuinfo_text(cores: int) -> str:
    """/proc/cpuinfo as an aarch64 Linux kernel writes it, for ``cores`` Cortex-A76 cores (:data:`QEMU_CPU`)."""
    fields = {"BogoMIPS": "62.50", "Features": ARM_FEATURES, **ARM_CPU}
    return "".join(
        f"processor\t: {core}\n" + "".join(f"{k}\t: {v}\n" for k, v in fields.items()) + "\n" for core in range(cores)
    )


def probe_script() -> str:
    """Prints the Python, the machine and every installed distribution (run inside the root's venv)."""
    return (
        "import json, platform, importlib.metadata as m; print(json.dumps({'python': platform.python_version(), "
        "'machine': platform.machine(), 'packages': {d.metadata['Name'].lower(): d.version for d in "
        "m.distributions()}}))"
    )


def host_versions() -> dict:
    from importlib import metadata  # lazy: this module also runs inside the arm64 root, stdlib only

    packages = {}
    for name in (*RUNTIME_PACKAGES, "tensorflow", "keras"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            packages[name] = metadata.version(name)
    return {
        "machine": platform.machine(),
        "python": platform.python_version(),
        "packages": packages,
        "install": "the full install (requirements.txt)",
    }


def _timed(function):
    start = time.perf_counter()
    result = function()
    return result, round(time.perf_counter() - start, 3)


def _read_answers(path: Path) -> tuple[list[str], list[str]]:
    """The expressions and the answers ``predcalc evaluate --output`` wrote."""
    rows = [line.split("\t") for line in path.read_text().splitlines()[1:]]  # expression, answer, truth, right
    return [row[0] for row in rows], [row[1] for row in rows]


def run_side(artifact: Artifact, tsv: Path, answers_file: Path, command) -> dict:
    """``predcalc predict`` and ``predcalc evaluate --json --output`` through ``command`` (a function
    running the predcalc arguments on one install)."""
    predicted, predict_s = _timed(lambda: command(["predict", PREDICT_EXPRESSION, "--model", artifact.path]))
    evaluated, evaluate_s = _timed(
        lambda: command(["evaluate", "--model", artifact.path, "--file", tsv, "--json", "--output", answers_file])
    )
    for result, what in ((predicted, "predict"), (evaluated, "evaluate")):
        if result.returncode != 0:
            killed = _signal_name(result.returncode)
            return {"error": f"predcalc {what} exited with {killed or result.returncode}: {_last_line(result.stderr)}"}
    expressions, answers = _read_answers(answers_file)
    return {
        "predict": predicted.stdout,
        "evaluate": json.loads(evaluated.stdout),
        "answers": answers,
        "expressions": expressions,
        "stderr": (predicted.stderr + evaluated.stderr).strip(),
        "wall_s": {"predict": predict_s, "evaluate": evaluate_s},
    }


def _read_pins(root: Root, log) -> tuple[dict, list[dict]]:
    """The root's Python and wheel platforms; its pins downloaded for them (and JetPack 6's for 3.10)."""
    tags = json.loads(
        root.run(
            [
                "python3",
                "-c",
                "import json, sys; from pip._vendor.packaging.tags import sys_tags; "
                "print(json.dumps({'python': '%d.%d' % sys.version_info[:2], "
                "'platforms': sorted({t.platform for t in sys_tags()})}))",
            ],
            "reading the root's wheel tags",
            cwd="/",
        ).stdout
    )
    wheels = root.inside(WHEELS)
    pins = download_wheels(runtime_requirements(tags["python"]), tags["python"], tags["platforms"], wheels, log)
    pins += download_wheels(
        runtime_requirements(JETPACK6["python"]),
        JETPACK6["python"],
        manylinux_platforms(JETPACK6["glibc"]),
        root.path.parent / "wheels-jetpack6",
        log,
    )
    for record in pins:
        record["run"] = record["python"] == tags["python"]
    _must(
        _run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "-d", wheels, "setuptools>=68"],
            log,
        ),
        "downloading setuptools (the build backend)",
        root.log_path,
    )
    return tags, pins


def _install(root: Root, work: Path, venv: str = VENV, requirements: list[str] | None = None) -> dict:
    """This tree's ``.[runtime]`` (or the project with ``requirements`` instead of the extra's pins) in a
    fresh venv inside the root, offline; what it installed."""
    from predcalc.paths import ROOT  # lazy: this module also runs inside the arm64 root, stdlib only

    source = work / "source"
    if not source.exists():
        shutil.copytree(ROOT / "lib", source / "lib", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, source / name)
    targets = (
        [f"{root.translate(source)}[runtime]"] if requirements is None else [*requirements, root.translate(source)]
    )
    root.run(["rm", "-rf", venv], "removing the old venv", cwd="/")
    root.run(["python3", "-m", "venv", venv], "creating the venv", cwd="/")
    _, install_s = _timed(
        lambda: root.run(
            [
                f"{venv}/bin/pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                # byte-compiling every installed module was half of this emulated install (32 s,
                # 17 s without, 2026-11-26); Python compiles the modules that run when first imported
                "--no-compile",
                "--no-index",
                "--find-links",
                f"/{WHEELS}",
                *targets,
            ],
            f"pip install {' '.join(map(str, targets))}",
            cwd="/",
        )
    )
    seen = json.loads(root.run([f"{venv}/bin/python", "-c", probe_script()], "reading versions", cwd="/").stdout)
    return {
        "uname_m": root.run(["uname", "-m"], "uname -m", cwd="/").stdout.strip(),
        "python": seen["python"],
        "runtime_packages": {n: seen["packages"].get(n) for n in RUNTIME_PACKAGES},
        "predcalc": seen["packages"].get("predcalc"),
        "packages": dict(sorted(seen["packages"].items())),
        "heavy_packages": sorted(set(seen["packages"]) & set(HEAVY)),
        "install_s_emulated": install_s,
    }


def _run_artifacts(root: Root, runnable: list[Artifact], work: Path, step, venvs: dict[str, str]) -> dict:
    """Each artifact on every side: ``x86_64`` (this install) and each of ``venvs`` (label: a venv inside
    the root): predict, evaluate, and the value models' raw predictions."""
    from predcalc.paths import ROOT  # lazy: this module also runs inside the arm64 root, stdlib only

    files = {}
    for name, lines in input_lines().items():
        files[name] = work / f"{name}.tsv"
        files[name].write_text("\n".join(lines) + "\n")
    host_env = {**os.environ, "PYTHONPATH": str(ROOT / "lib"), "TF_CPP_MIN_LOG_LEVEL": "3"}

    def on_host(arguments, program="predcalc"):
        command = ["-m", "predcalc.cli"] if program == "predcalc" else []
        return _run([sys.executable, *command, *arguments], root.log, env=host_env, cwd=ROOT)

    def in_root(venv):
        return lambda arguments, program="predcalc": root.run([f"{venv}/bin/{program}", *arguments])

    commands = {"x86_64": on_host, **{label: in_root(venv) for label, venv in venvs.items()}}
    sides = {}
    for artifact in runnable:
        step(artifact.name)
        tsv = files["calculator" if artifact.calculator else "seed"]
        slug = artifact.name.replace("/", "__")
        sides[artifact.name] = {
            label: run_side(artifact, tsv, work / f"{slug}.{label}.tsv", command) for label, command in commands.items()
        }
    step("raw values")
    for label, command in commands.items():
        values = [a for a in runnable if not a.calculator and "error" not in sides[a.name][label]]
        if not values:
            continue
        result = command(
            ["-m", "predcalc.deploy.jetson_check", "values", "--file", files["seed"], *[a.path for a in values]],
            program="python",
        )
        found = json.loads(_must(result, f"raw values ({label})", root.log_path).stdout)
        for artifact in values:
            sides[artifact.name][label]["values"] = found[str(artifact.path)]
        probed = [a for a in values if a.not_recommended and a.runtime == "LiteRT"]  # why they differ
        if probed:
            result = command(
                ["-m", "predcalc.deploy.jetson_check", "values", "--builtin-kernels", "--file", files["seed"]]
                + [a.path for a in probed],
                program="python",
            )
            found = json.loads(_must(result, f"raw values on the builtin kernels ({label})", root.log_path).stdout)
            for artifact in probed:
                sides[artifact.name][label]["values_builtin"] = found[str(artifact.path)]
    return sides


def jetpack6_comparison(record: dict) -> dict:
    """Of an :func:`artifact_record` for the JetPack 6 versions: only whether they agree with x86-64."""
    kept = {k: record[k] for k in ("agree", "answers", "values", "error") if k in record}
    if "predict" in record:
        kept.update(
            predict=record["predict"],
            evaluate_same=record["evaluate"]["same"],
            wall_s_emulated=record["wall_s"]["aarch64_emulated"],
        )
    return kept


def check(
    root_path: Path,
    output: Path,
    artifacts: list[Artifact] | None = None,
    progress: bool = True,
    log_path: Path | None = None,
    build: bool = True,
    jetpack6_versions: bool = True,
) -> dict:
    """Build (once, unless ``build`` is false) and enter the arm64 root, install the runtime extra,
    run every artifact on both sides and write the record to ``output``. Returns the record.

    With ``jetpack6_versions``, a second venv holds the versions the Python 3.10 pins give (JetPack
    6) on the root's Python, and every artifact runs there too."""
    from tqdm.auto import tqdm  # lazy: this module also runs inside the arm64 root, stdlib only

    from predcalc.paths import ROOT, SCRATCH, write_if_changed

    artifacts = recommended_artifacts() if artifacts is None else artifacts
    runnable = [a for a in artifacts if not a.skipped]
    if not runnable:
        raise CheckError("no artifact to run: " + "; ".join(a.skipped for a in artifacts))
    log_path = Path(log_path or SCRATCH / "jetson_check" / "log.txt")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # the lock, host, root, wheels, install (twice), each artifact, raw values, without the cpuinfo
    steps = 7 + jetpack6_versions + len(runnable)
    with (
        contextlib.ExitStack() as stack,
        open(log_path, "w") as log,
        tqdm(total=steps, desc="jetson-check", disable=not progress) as bar,
    ):
        started = []

        def step(name):  # the bar counts the steps done; its postfix names the one under way
            if started:
                bar.update()
            started.append(name)
            bar.set_postfix_str(name)

        root = Root(root_path, ROOT, log, log_path)
        step("waiting for another check on the same root")
        stack.enter_context(root.locked())  # two checks on one root would replace each other's venvs
        step("host tools")
        root.prepare_host()
        step("arm64 root (debootstrap, once: a few minutes)" if not root.ready else "arm64 root")
        if not root.ready:
            if not build:
                raise CheckError(f"no arm64 root at {root_path} (make jetson-check builds it)")
            root.build()
        step("wheels")
        tags, pins = _read_pins(root, log)
        failed = [p for p in pins if "error" in p and p["run"]]
        if failed:
            message = "; ".join(f"{p['requirement']}: {p['error']}" for p in failed)
            write_if_changed(output, json.dumps({"error": message, "pins": pins}, indent=1) + "\n")
            raise CheckError(message)
        jetpack6 = None
        if jetpack6_versions:  # the JetPack 6 pins' versions, for the root's Python
            requirements = runtime_requirements(JETPACK6["python"])
            found = download_wheels(requirements, tags["python"], tags["platforms"], root.inside(WHEELS), log)
            missing = [f"{p['requirement']}: {p['error']}" for p in found if "error" in p]
            jetpack6 = (
                {"requirements": requirements, "skipped": "; ".join(missing)}
                if missing
                else {"requirements": requirements}
            )
        step("install .[runtime]")
        work = root.inside(WORK)
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        venvs = {"aarch64": VENV}
        with root.mounted():
            arm = {**_install(root, work), "python_minor": tags["python"]}
            if jetpack6 and "skipped" not in jetpack6:
                step("install JetPack 6's versions")
                jetpack6.update(_install(root, work, JETPACK6_VENV, jetpack6["requirements"]))
                venvs["aarch64_jetpack6_versions"] = JETPACK6_VENV
            sides = _run_artifacts(root, runnable, work, step, venvs)
        step("without the aarch64 cpuinfo, on qemu's max CPU")
        with root.mounted(arm_cpuinfo=False):  # what the emulation does without the workaround
            bare = root.run([f"{VENV}/bin/predcalc", "predict", PREDICT_EXPRESSION, "--model", runnable[0].path])
        with root.mounted():  # the integer kernels on other CPUs (PROBE_CPUS)
            on_other = [
                (
                    cpu,
                    a.name,
                    root.run([f"{VENV}/bin/predcalc", "predict", PREDICT_EXPRESSION, "--model", a.path], cpu=cpu),
                )
                for cpu in PROBE_CPUS
                for a in runnable
                if "int8" in a.path.name
            ]
        bar.update(steps - bar.n)

    checked = [artifact_record(a, sides[a.name]["aarch64"], sides[a.name]["x86_64"]) for a in runnable]
    if "aarch64_jetpack6_versions" in venvs:
        for entry, artifact in zip(checked, runnable):
            sides_of = sides[artifact.name]
            entry["jetpack6_versions"] = jetpack6_comparison(
                artifact_record(artifact, sides_of["aarch64_jetpack6_versions"], sides_of["x86_64"])
            )
    skipped = [{"name": a.name, "file": _relative(a.path), "reason": a.skipped} for a in artifacts if a.skipped]
    record = {
        "what": "make jetson-check: the runtime extra and the recommended artifacts on aarch64 (qemu-user), "
        "compared with the x86-64 full install on the same files and inputs",
        "timing_note": EMULATION_NOTE,
        "root": {
            "suite": SUITE,
            "variant": "minbase",
            "packages": list(ROOT_PACKAGES),
            "emulator": "qemu-user (binfmt_misc)" if platform.machine() != "aarch64" else "none (aarch64 host)",
        },
        "aarch64": arm,
        "aarch64_jetpack6_versions": None
        if jetpack6 is None
        else {
            **jetpack6,
            "note": f"the versions the Python {JETPACK6['python']} pins give (JetPack 6), installed on "
            "the root's Python: the packages checked, not JetPack's Python",
        },
        "emulation": {
            "cpuinfo": f"an aarch64 /proc/cpuinfo ({QEMU_CPU} cores) mounted over the x86-64 one qemu-user "
            "passes through",
            "without_it": {
                "command": f"predcalc predict {PREDICT_EXPRESSION!r} --model {_relative(runnable[0].path)}",
                "rc": bare.returncode,
                "signal": _signal_name(bare.returncode),
                "stderr": _last_line(bare.stderr),
            },
            "cpu": f"qemu's {QEMU_CPU} (ARMv8.2-A with dot product and FP16, like the Orin's Cortex-A78AE, "
            "which qemu 7.2 does not have)",
            "other_cpus": [
                {
                    "cpu": cpu,
                    "name": name,
                    "predict": run.stdout.strip(),
                    "rc": run.returncode,
                    "signal": _signal_name(run.returncode),
                    "same_as_x86_64": run.stdout.strip() == sides[name]["x86_64"].get("predict", "").strip(),
                }
                for cpu, name, run in on_other
            ],
        },
        "x86_64": host_versions(),
        "pins": pins,
        "inputs": {
            "seed_test_sets": dict(SEED_TEST_SETS),
            "data_seed": 0,
            "calculator_extra": list(CALCULATOR_EXPRESSIONS),
            "predict": PREDICT_EXPRESSION,
        },
        "artifacts": checked,
        "skipped": skipped,
    }
    record["summary"] = summary(checked, skipped)
    record["result"] = result_lines(record)
    output.parent.mkdir(parents=True, exist_ok=True)
    write_if_changed(output, json.dumps(record, indent=1) + "\n")
    return record


def _values(file: str, artifacts: list[str], builtin_kernels: bool = False) -> dict:
    """Each value model's raw predictions on the file's expressions (run inside the root and on the
    host); with ``builtin_kernels``, LiteRT files on LiteRT's builtin kernels, without the XNNPACK
    delegate it applies by default (one file at its trained length: a value model's first output)."""
    from predcalc.data.files import load_exact_pairs  # lazy: this module also runs inside the arm64 root, stdlib only
    from predcalc.deploy.formats.litert import LiteRTModel
    from predcalc.deploy.predictor import Predictor

    expressions = [e for e, _ in load_exact_pairs(file)]
    found = {}
    for artifact in artifacts:
        predictor = Predictor(artifact)
        if builtin_kernels:
            outputs = LiteRTModel(artifact, default_delegates=False)(predictor.encode(expressions))
            found[artifact] = [float(v) for v in outputs.reshape(len(expressions), -1)[:, 0]]
        else:
            found[artifact] = [float(v) for v in predictor.predict(expressions)]
    return found


def _rewrite(output: Path) -> int:
    """The ``readme`` command: summary, result lines and README from the stored record."""
    from predcalc.paths import write_if_changed  # lazy: this module also runs inside the arm64 root, stdlib only

    record = json.loads(output.read_text())
    record["summary"] = summary(record["artifacts"], record["skipped"])
    record["result"] = result_lines(record)
    write_if_changed(output, json.dumps(record, indent=1) + "\n")
    print("\n".join(record["result"]))
    return 0 if update_readme(record) else 1


def default_root() -> Path:
    return Path(os.environ.get("PREDCALC_ARM64_ROOT") or Path.home() / ".cache" / "predcalc" / "arm64-root")


def main(argv=None) -> int:
    from predcalc.paths import REPORTS  # lazy: this module also runs inside the arm64 root, stdlib only

    parser = argparse.ArgumentParser(prog="python -m predcalc.deploy.jetson_check", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command")
    run = commands.add_parser("check", help="the whole check (the default)")
    run.add_argument(
        "--root",
        type=Path,
        default=None,
        help="the arm64 root (default ~/.cache/predcalc/arm64-root or $PREDCALC_ARM64_ROOT)",
    )
    run.add_argument("--output", type=Path, default=REPORTS / OUTPUT)
    readme = commands.add_parser(
        "readme", help="rewrite the stored record's summary and the README's lines from its artifacts (no run)"
    )
    readme.add_argument("--output", type=Path, default=REPORTS / OUTPUT)
    values = commands.add_parser("values", help="raw predictions as JSON (what the check runs on each side)")
    values.add_argument("--file", required=True)
    values.add_argument("--builtin-kernels", action="store_true", help="LiteRT without its default XNNPACK delegate")
    values.add_argument("artifacts", nargs="+")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv if argv and argv[0] in commands.choices else ["check", *argv])
    if args.command == "values":
        print(json.dumps(_values(args.file, args.artifacts, args.builtin_kernels)))
        return 0
    if args.command == "readme":
        return _rewrite(args.output)
    import signal  # lazy: this module also runs inside the arm64 root, stdlib only

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unmount the root's mounts on the way out
    try:
        record = check(args.root or default_root(), args.output)
    except CheckError as error:
        print(f"jetson-check: {error}", file=sys.stderr)
        return 1
    print("\n".join(record["result"]))
    readme = " and the README's Jetson section" if update_readme(record) else ""
    print(f"wrote {_relative(args.output)}{readme}")
    return 0 if not (record["summary"]["disagree"] or record["summary"]["failed"]) else 1


if __name__ == "__main__":
    sys.exit(main())
