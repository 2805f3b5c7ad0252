"""The repository stays lean (issue 33): the files git tracks stay under LIMIT_BYTES. Exported
artifacts of models the findings do not recommend, and a sweep's executed notebooks and figures,
are git-ignored and written again by `make exports` / `predcalc sweep`."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# 25 MB until issue 40: the tree then measured 26.0 MB (2026-11-27), of which 0.6 MB are the ten seeds'
# ONNX, LiteRT and Keras files of 33_trained_exact_scan, the files its held-out claim is scored
# through (kept so the claim can be checked without retraining); the limit leaves about 1 MB above that.
# Issue 41 added its ten fresh seeds' ONNX, LiteRT and JSON files (0.4 MB, no model.keras): 26.7 MB,
# then the arithmetic-unit notebook 11 (its executed copy, record and figure, 0.14 MB, no model files)
# and the sign scan's rerun: 27.0 MB. The limit leaves 0.5 MB above that.
# The fourth session of issue 41 added results, no model files: every seed on held-out suite 5151
# (reports/edges, 0.3 MB more), the calculator's restart study (its records and cached parts, 0.25 MB),
# notebook 34 (its executed copy and record, 0.15 MB) and a longer findings page: 28.1 MB.
# Issue 50 added the digit models: every seed's ONNX file of the three digit models the findings
# recommend (13 files, 5.6 MB; their held-out claims are scored through them), their records, and
# notebook 41's executed copy: 35.1 MB. Their checkpoints stay out (git-ignored).
# Its second session kept only the two recommended digit models' files (every seed's ONNX file of
# the learned-id decoder and the column GRU, seed 10's LiteRT file of each) and dropped the others'
# (their scores stay): 35.0 MB with the retired prose machinery's deletions.
LIMIT_BYTES = 36_000_000


def test_the_tracked_tree_stays_under_the_limit():
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    paths = [ROOT / name for name in listed.stdout.decode().split("\0") if name]
    sizes = {path: path.stat().st_size for path in paths if path.is_file()}
    total = sum(sizes.values())
    largest = sorted(sizes, key=sizes.get, reverse=True)[:5]
    assert total < LIMIT_BYTES, (
        f"git tracks {total / 1e6:.1f} MB (limit {LIMIT_BYTES / 1e6:.0f} MB); largest: "
        + ", ".join(f"{p.relative_to(ROOT)} ({sizes[p] / 1e6:.1f} MB)" for p in largest)
    )
