"""What the Jetson check runs, where, and on which inputs: its fixed settings."""

from __future__ import annotations

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
REFERENCE_TEST_SETS = {"test_in": 100, "test_out": 100, "test_long": 100}  # the reference protocol's (data seed 0)
OUTPUT = "jetson_check.json"
GUIDE_START, GUIDE_END = "<!-- jetson-check:start -->", "<!-- jetson-check:end -->"
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
