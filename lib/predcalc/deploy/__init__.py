"""Deploy: exported artifacts and the runtimes that read them (on a laptop or a Jetson).

- :mod:`~predcalc.deploy.export`: SavedModel, LiteRT (float32 / float16 / int8) and ONNX files of a
  trained model, each checked against Keras; the LiteRT / ONNX / SavedModel runners.
- :mod:`~predcalc.deploy.predictor`: :class:`Predictor`, what ``predcalc predict`` and ``evaluate`` call.
- :mod:`~predcalc.deploy.tensorrt`: TF-TRT engines where TensorFlow has TensorRT.
- :mod:`~predcalc.deploy.bench`: latency and throughput of every runtime (``predcalc bench``).

Every module here imports only NumPy at import time: Keras, TensorFlow, ONNX Runtime and LiteRT
are imported inside the functions that need them, so the calculator runs on a Jetson with NumPy
and one runtime.
"""
