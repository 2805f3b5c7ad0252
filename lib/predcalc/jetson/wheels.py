"""The pins: the runtime extra's requirements and their aarch64 wheels, downloaded on the host."""

from __future__ import annotations

import sys
from pathlib import Path

from predcalc.jetson.root import last_line, run_logged

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
        result = run_logged([*base, "--no-deps", "-d", str(pinned), requirement], log)
        wheels = sorted(p.name for p in pinned.glob("*.whl"))
        record = {"requirement": requirement, "python": python_version}
        if result.returncode == 0 and wheels:
            record["wheel"] = wheels[0]
        else:
            record["error"] = f"no aarch64 wheel for Python {python_version}: " + last_line(result.stderr)
        records.append(record)
    if all("wheel" in r for r in records):
        result = run_logged([*base, "-d", str(directory), *requirements], log)
        if result.returncode != 0:  # each pin has a wheel, but they do not resolve together
            for record in records:
                record["error"] = f"the pins do not resolve together: {last_line(result.stderr)}"
    return records


# -- comparing -------------------------------------------------------------------------------------
