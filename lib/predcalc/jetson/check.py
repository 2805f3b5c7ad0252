"""The whole check: install the runtime extra in the root, run every artifact on both sides, record."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

from predcalc.jetson.artifacts import Artifact, input_lines, recommended_artifacts
from predcalc.jetson.compare import PROBE_CPUS, artifact_record, summary
from predcalc.jetson.result import result_lines
from predcalc.jetson.root import Root, host_versions, last_line, must, probe_script, run_logged, shown, signal_name
from predcalc.jetson.settings import (
    CALCULATOR_EXPRESSIONS,
    EMULATION_NOTE,
    HEAVY,
    JETPACK6,
    JETPACK6_VENV,
    PREDICT_EXPRESSION,
    QEMU_CPU,
    REFERENCE_TEST_SETS,
    ROOT_PACKAGES,
    RUNTIME_PACKAGES,
    SUITE,
    VENV,
    WHEELS,
    WORK,
    CheckError,
)
from predcalc.jetson.wheels import download_wheels, manylinux_platforms, runtime_requirements


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
            killed = signal_name(result.returncode)
            return {"error": f"predcalc {what} exited with {killed or result.returncode}: {last_line(result.stderr)}"}
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
    must(
        run_logged(
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
        return run_logged([sys.executable, *command, *arguments], root.log, env=host_env, cwd=ROOT)

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
            ["-m", "predcalc.jetson", "values", "--file", files["seed"], *[a.path for a in values]],
            program="python",
        )
        found = json.loads(must(result, f"raw values ({label})", root.log_path).stdout)
        for artifact in values:
            sides[artifact.name][label]["values"] = found[str(artifact.path)]
        probed = [a for a in values if a.not_recommended and a.runtime == "LiteRT"]  # why they differ
        if probed:
            result = command(
                ["-m", "predcalc.jetson", "values", "--builtin-kernels", "--file", files["seed"]]
                + [a.path for a in probed],
                program="python",
            )
            found = json.loads(must(result, f"raw values on the builtin kernels ({label})", root.log_path).stdout)
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
    skipped = [{"name": a.name, "file": shown(a.path), "reason": a.skipped} for a in artifacts if a.skipped]
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
                "command": f"predcalc predict {PREDICT_EXPRESSION!r} --model {shown(runnable[0].path)}",
                "rc": bare.returncode,
                "signal": signal_name(bare.returncode),
                "stderr": last_line(bare.stderr),
            },
            "cpu": f"qemu's {QEMU_CPU} (ARMv8.2-A with dot product and FP16, like the Orin's Cortex-A78AE, "
            "which qemu 7.2 does not have)",
            "other_cpus": [
                {
                    "cpu": cpu,
                    "name": name,
                    "predict": run.stdout.strip(),
                    "rc": run.returncode,
                    "signal": signal_name(run.returncode),
                    "same_as_x86_64": run.stdout.strip() == sides[name]["x86_64"].get("predict", "").strip(),
                }
                for cpu, name, run in on_other
            ],
        },
        "x86_64": host_versions(),
        "pins": pins,
        "inputs": {
            "reference_test_sets": dict(REFERENCE_TEST_SETS),
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
