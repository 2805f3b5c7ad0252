"""TF-TRT engines (``saved_model_trt_<precision>/``), built from the SavedModel where TensorFlow has
TensorRT (a Jetson) by :mod:`predcalc.deploy.tensorrt`; run as SavedModels. Not a default format:
``export_trained(..., formats=("tensorrt",))`` builds FP16 engines after the SavedModel."""

from __future__ import annotations

from pathlib import Path

from predcalc.deploy.formats import ExportFormat, register
from predcalc.deploy.formats.saved_model import SavedModelRunner


class TensorRT(ExportFormat):
    name, filename, parity, runtime, default = "tensorrt", "saved_model_trt_fp16", None, "tensorrt", False

    def matches(self, path) -> bool:
        path = Path(path)
        return path.name.startswith("saved_model_trt_") and (path / "saved_model.pb").is_file()

    def export(self, job) -> dict[str, dict]:
        """FP16 engines checked against the SavedModel (:func:`predcalc.deploy.tensorrt.convert_export`)."""
        # deploy.tensorrt (TF-TRT, where TensorFlow has TensorRT) imports this package: import it when used
        from predcalc.deploy.tensorrt import convert_export

        return {self.name: convert_export(job.directory, precisions=("FP16",))["FP16"]}

    def artifacts(self, directory) -> list[tuple[str, Path]]:
        return [
            (f"tensorrt_{path.name.rsplit('_', 1)[-1]}", path)
            for path in sorted(Path(directory).glob("saved_model_trt_*"))
            if self.matches(path)
        ]

    def open(self, path, num_threads: int = 1):
        return SavedModelRunner(path)


register(TensorRT())
