"""Silencing the runtimes, one way everywhere: TensorFlow's, absl's and LiteRT's start-up and log
lines ("All log messages before absl::InitializeLog()", the CUDA stub, "Assets written to ...",
the XNNPACK banner) are not output of this project. Standard library only at import."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

# Set before TensorFlow is imported: its C++ log lines off, and deterministic (non-oneDNN) kernels.
ENVIRONMENT = {"TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": "0"}
DEBUG = "PREDCALC_DEBUG"  # set: nothing is silenced (and commands show tracebacks)


def quiet_environment(environment: dict | None = None) -> dict:
    """:data:`ENVIRONMENT` set (where not set already) in ``environment`` (default ``os.environ``)."""
    target = os.environ if environment is None else environment
    for key, value in ENVIRONMENT.items():
        target.setdefault(key, value)
    return target


@contextlib.contextmanager
def silenced_stderr(to: Path | None = None):
    """File descriptor 2 to ``to`` (default /dev/null) for the block: C++ lines ignore Python's
    ``sys.stderr``. Python's own stderr is flushed first and restored after; nothing is silenced
    where :data:`DEBUG` is set or there is no real descriptor (an embedding, a test capture)."""
    if os.environ.get(DEBUG):
        yield
        return
    try:
        sys.stderr.flush()
        saved, target = os.dup(2), os.open(to or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    except (OSError, ValueError):
        yield
        return
    try:
        os.dup2(target, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)


def quiet_tensorflow() -> None:
    """Load TensorFlow (where installed) with its start-up lines silenced, and its Python loggers
    (``INFO:tensorflow:Assets written to ...``) at errors only."""
    quiet_environment()
    with silenced_stderr():
        try:
            import absl.logging  # loaded here, its start-up lines silenced; absent on a deploy machine
            import tensorflow as tf

            tf.config.list_physical_devices()
            tf.get_logger().setLevel("ERROR")
            absl.logging.set_verbosity(absl.logging.ERROR)
        except ImportError:  # no TensorFlow (a deploy machine): the command loads what it needs
            pass
