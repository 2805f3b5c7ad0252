"""Deploy: exported artifacts and the runtimes that read them (on a laptop or a Jetson).

- :mod:`~predcalc.deploy.formats`: the export formats, one module each (LiteRT, ONNX, SavedModel,
  TF-TRT, the ``.keras`` file): writer, runner and parity policy; a new format is a new module.
- :mod:`~predcalc.deploy.export`: every registered format of a trained model, each checked against
  Keras (``export_trained``, ``export_results``, ``export_directory``).
- :mod:`~predcalc.deploy.predictor`: :class:`Predictor`, what ``predcalc predict`` and ``evaluate`` call.
- :mod:`~predcalc.deploy.tensorrt`: TF-TRT engines where TensorFlow has TensorRT.
- :mod:`~predcalc.deploy.bench`: latency and throughput of every runtime (``predcalc bench``).
- :mod:`~predcalc.deploy.child`: the converters that run in a child process.

Every module here imports only NumPy at import time: Keras, TensorFlow, ONNX Runtime and LiteRT
are imported inside the functions that need them, so the calculator runs on a Jetson with NumPy
and one runtime.
"""
