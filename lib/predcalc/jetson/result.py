"""The record's summary in sentences, and the deploy guide's lines between its markers."""

from __future__ import annotations

from pathlib import Path

from predcalc.jetson.compare import PROBE_CPUS
from predcalc.jetson.settings import GUIDE_END, GUIDE_START, JETPACK6
from predcalc.readable import percent


def result_lines(record: dict) -> list[str]:
    """The check's result in a few sentences (the deploy guide, docs/deploy.md, quotes them)."""
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
            f"accuracy {percent(other['exact_aarch64'])} on aarch64 against "
            f"{percent(other['exact_x86_64'])} on x86-64."
        )
    if total["failed"]:
        lines.append("Failed to run: " + ", ".join(total["failed"]) + ".")
    if total["skipped"]:
        lines.append("Skipped (no file): " + ", ".join(total["skipped"]) + ".")
    for other in total.get("not_recommended", []):
        lines.append(not_recommended_line(other))
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


def not_recommended_line(other: dict) -> str:
    """One sentence on an artifact run but not recommended: the reason and how its sides differ."""
    line = f"Checked, not recommended for the Jetson: `{other['name']}` ({other['reason']})"
    if "error" in other:
        return line + ": it failed to run."
    if other["agree"]:
        return line + f": the same answers on both ({other['n'] - other['answers_differ']} of {other['n']})."
    line += (
        f": {other['answers_differ']} of {other['n']} answers differ (exact accuracy "
        f"{percent(other['exact_aarch64'])} on aarch64 against {percent(other['exact_x86_64'])} on x86-64)"
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


def update_guide(record: dict, guide: Path | None = None) -> bool:
    """The deploy guide (docs/deploy.md) quotes the last result (between its jetson-check markers)."""
    from predcalc.paths import ROOT, replace_between  # lazy: this module also runs inside the arm64 root, stdlib only

    text = "\n".join(f"- {line}" for line in record["result"])
    return replace_between(guide or ROOT / "docs" / "deploy.md", GUIDE_START, GUIDE_END, text)
