"""The Jetson path checked on aarch64 under emulation (``make jetson-check``, issue 35).

On an x86-64 Debian or Ubuntu machine with root: an arm64 Debian root (debootstrap, run by
qemu-user; built once and cached, by default in ``~/.cache/predcalc/arm64-root``), the pinned
aarch64 wheels of the ``runtime`` extra downloaded on the host (pip inside the root cannot verify
the index's certificate) and installed offline into a fresh virtual environment there with this
working tree's ``.[runtime]``, as the deploy guide (docs/deploy.md) does. Then ``predcalc predict`` and
``predcalc evaluate`` on the learned calculator and on every LiteRT and ONNX file of the
recommended exports (``reports/recommended.json``, :func:`predcalc.recommended.exports`), inside the root and
with this machine's full install, on the same files and inputs; ``reports/jetson_check.json``
records the architecture seen inside, the versions, each artifact's agreement and the wall times
(emulated: not a latency on a Jetson). The pins for Python 3.10 (JetPack 6) are only downloaded
for aarch64, not run: the Debian root's Python is 3.11.

A format in :data:`NOT_RECOMMENDED_FORMATS` (dynamic-range int8) is run and recorded like the rest,
with the differing answers and a second run on LiteRT's builtin kernels, but it is not a
recommended Jetson artifact: it does not decide the check's outcome, and the record and the deploy guide
list it apart, with its numbers.

Runs as ``python -m predcalc.jetson`` on the host; inside the root the same module
(``... values``) prints each artifact's raw answers. Stdlib only at import time: the root has
NumPy and the runtimes, nothing else.
"""
