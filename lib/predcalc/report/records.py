"""The records the report reads: a :class:`predcalc.record.RunRecord` with the ``folder`` it was read
from, the ``profile`` and ``overrides`` of its ``run.json`` and, for a sweep's merged record, the ``sweep``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from predcalc.record import RunRecord
from predcalc.training.runner import RUN_INFO

DEFAULT_PROFILE = "notebook defaults"  # a run with no run.json: the notebook's own parameters


@dataclass
class StoredRecord(RunRecord):
    folder: Path | None = None
    profile: str = "this run"  # a record a notebook passes in itself, not read from a folder
    overrides: dict = field(default_factory=dict)
    sweep: str | None = None

    @classmethod
    def load(cls, path) -> StoredRecord:
        path = Path(path)
        info = path.parent / RUN_INFO
        run_info = json.loads(info.read_text()) if info.is_file() else {}
        return cls.of(
            RunRecord.load(path),
            folder=path.parent,
            profile=run_info.get("profile", DEFAULT_PROFILE),
            overrides=run_info.get("overrides") or {},
        )

    @classmethod
    def of(cls, record, **where) -> StoredRecord:
        """``record`` (a :class:`RunRecord` or its JSON form) as a stored record, with ``where`` set."""
        if isinstance(record, StoredRecord):
            return replace(record, **where) if where else record
        if not isinstance(record, RunRecord):
            record = RunRecord.from_json(record)
        fields = {name: getattr(record, name) for name in RunRecord.__dataclass_fields__}
        return cls(**fields, **where)
