"""The arm64 Debian root: built once with debootstrap, entered with chroot under qemu-user."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import subprocess
from pathlib import Path

from predcalc.errors import one_line
from predcalc.jetson.settings import (
    ARM_CPU,
    ARM_FEATURES,
    CPUINFO,
    HOST_TOOLS,
    QEMU_CPU,
    ROOT_MARKER,
    ROOT_PACKAGES,
    RUNTIME_PACKAGES,
    SUITE,
    VENV,
    CheckError,
)

# -- running ---------------------------------------------------------------------------------------


def shown(path) -> str:
    from predcalc.paths import relative  # lazy: this module also runs inside the arm64 root, stdlib only

    return relative(path)


def signal_name(returncode: int) -> str | None:
    """SIGSEGV for -11: what killed a command (None where it exited)."""
    import signal  # lazy: this module also runs inside the arm64 root, stdlib only

    return signal.Signals(-returncode).name if returncode < 0 else None


def last_line(text: str) -> str:
    """The verdict of a command's output: its last non-empty line."""
    return one_line(text or "", last=True)


def run_logged(command, log, **kwargs) -> subprocess.CompletedProcess:
    """A command with its output captured (and appended to the log), never on the terminal."""
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, **kwargs)
    log.write(f"$ {' '.join(map(str, command))}\n[rc {result.returncode}]\n{result.stdout}{result.stderr}\n")
    log.flush()
    return result


def must(result: subprocess.CompletedProcess, what: str, log_path: Path) -> subprocess.CompletedProcess:
    if result.returncode != 0:
        raise CheckError(f"{what} failed ({last_line(result.stderr or result.stdout)}); see {log_path}")
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
            must(run_logged(["apt-get", "update", "-q"], self.log, env=env), "apt-get update", self.log_path)
            must(
                run_logged(["apt-get", "install", "-y", "-q", *missing], self.log, env=env),
                f"apt-get install {' '.join(missing)}",
                self.log_path,
            )
        binfmt = Path("/proc/sys/fs/binfmt_misc")
        if not (binfmt / "status").exists():
            must(
                run_logged(["mount", "-t", "binfmt_misc", "binfmt_misc", binfmt], self.log),
                "mounting binfmt_misc",
                self.log_path,
            )
        must(run_logged(["update-binfmts", "--enable", "qemu-aarch64"], self.log), "update-binfmts", self.log_path)

    def build(self) -> None:
        """debootstrap into a temporary folder, renamed into place when complete (a few minutes)."""
        partial = self.path.with_name(self.path.name + ".partial")
        if partial.exists():
            shutil.rmtree(partial)
        partial.parent.mkdir(parents=True, exist_ok=True)
        must(
            run_logged(
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
                must(run_logged(["mount", *options, where], self.log), f"mounting {where}", self.log_path)
                done.append(where)
                if target == self.repository.relative_to("/"):
                    must(
                        run_logged(["mount", "-o", "remount,bind,ro", where], self.log),
                        f"making {where} read-only",
                        self.log_path,
                    )
            yield self
        finally:
            for where in reversed(done):
                if run_logged(["umount", where], self.log).returncode != 0:
                    run_logged(["umount", "-l", where], self.log)

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
        result = run_logged(
            ["chroot", self.path, *env, "sh", "-c", script, "sh", cwd or self.repository, *command], self.log
        )
        return must(result, what, self.log_path) if what else result

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
