"""The ``.keras`` file itself (what training saves, never written by ``export_trained``): the
predictor runs it through Keras, which is imported only when such a file is opened."""

from __future__ import annotations

from predcalc.deploy.formats import ExportFormat, register


class KerasFile(ExportFormat):
    name, filename, parity, runtime, default = "keras", "model.keras", None, None, False

    def open(self, path, num_threads: int = 1):
        import keras  # only this format needs Keras; the runtime-only install never opens it

        import predcalc.layers  # noqa: F401  (registers the custom layers)

        model = keras.saving.load_model(path)
        return lambda inputs: model.predict(inputs, verbose=0)


register(KerasFile())
