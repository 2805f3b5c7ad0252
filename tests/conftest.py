import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

import pytest


@pytest.fixture(scope="session")
def exported_fnn2(tmp_path_factory):
    """An FNN2 trained for 3 epochs and exported in every format (with model.keras)."""
    from predcalc.data import seed_protocol
    from predcalc.deploy.export import export_trained, write_export_record
    from predcalc.training import fit

    protocol = seed_protocol(0)
    trained = fit.train("fnn2", protocol, seed=0, epochs=3)
    directory = tmp_path_factory.mktemp("export") / "fnn2"
    report = export_trained(
        trained, directory, {"in": protocol.test_in, "out": protocol.test_out}, protocol.train.expressions[:100]
    )
    trained.model.save(directory / "model.keras")
    write_export_record(directory, trained.spec, report, {"data_seed": 0})
    return protocol, trained, directory, report
