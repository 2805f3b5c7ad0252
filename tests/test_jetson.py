"""`make jetson-check` (issue 35): the comparison and the record without qemu, and its smallest part
(the calculator and one LiteRT file) on aarch64 where the cached arm64 root and qemu are here."""

import dataclasses
import json
import math
import os
import platform
from pathlib import Path

import pytest

from predcalc.jetson import artifacts, check, command, compare, result, root, settings, wheels
from predcalc.paths import ROOT


def side(predict="3 - -2 + 4 = 9", exact=1.0, answers=("9", "4"), values=(9.0, 4.0)):
    return {
        "predict": predict + "\n",
        "evaluate": {"model": "x", "file": "y", "n": 2, "exact": exact, "lowest_terms": 1.0, "mae": 0.01},
        "answers": list(answers),
        "values": list(values),
        "stderr": "",
        "wall_s": {"predict": 1.0},
    }


ARTIFACT = artifacts.Artifact("fnn2/model_float32.tflite", Path("reports/x/model_float32.tflite"), "LiteRT", "default")


def test_compare_values_counts_identical_values_and_the_largest_difference():
    assert compare.compare_values([1.0, 2.0, math.nan], [1.0, 2.5, math.nan]) == {
        "n": 3,
        "identical": 2,
        "max_abs_diff": 0.5,
    }
    assert compare.compare_values([math.nan], [1.0])["max_abs_diff"] == math.inf
    with pytest.raises(ValueError, match="2 aarch64 values against 1"):
        compare.compare_values([1.0, 2.0], [1.0])


def test_predict_lines_agree_when_only_the_value_moves_within_the_tolerance():
    line = "3 - -2 + 4 = {}  (predicted by m (model_float32.tflite); rounded 9; exact 9)"
    close = compare.compare_predict(line.format("8.9720"), line.format("8.9717"), tolerance=0.01)
    assert close["agree"] and not close["same"]
    assert not compare.compare_predict(line.format("8.9720"), line.format("8.9717"), tolerance=1e-4)["agree"]
    assert not compare.compare_predict(line.format("8.9720"), line.format("8.9717"), tolerance=None)["agree"]
    other = "3 - -2 + 4 = 8.9720  (predicted by m (model_float32.tflite); rounded 9; exact 8)"
    assert not compare.compare_predict(other, line.format("8.9717"), tolerance=0.01)["agree"]
    calculator = "3 - -2 + 4 = 9  (calculated by calculator (model.tflite))"
    assert compare.compare_predict(calculator, calculator + "\n", tolerance=None) == {
        "aarch64": calculator,
        "x86_64": calculator,
        "same": True,
        "agree": True,
    }


def test_compare_answers_counts_the_same_texts():
    assert compare.compare_answers(["9", "7/3", ""], ["9", "7/3", "1"]) == {"n": 3, "identical": 2}
    with pytest.raises(ValueError):
        compare.compare_answers(["9"], [])


def test_an_artifact_agrees_only_when_predict_metrics_and_every_answer_match():
    record = compare.artifact_record(ARTIFACT, side(), side(values=(9.0, 4.000001)))
    assert record["agree"] and record["predict"]["same"] and record["evaluate"]["same"]
    assert record["values"] == {
        "n": 2,
        "identical": 1,
        "max_abs_diff": pytest.approx(1e-6),
        "tolerance": pytest.approx(9e-3),
        "within": True,
    }  # export's parity: 1e-3 of max |value|
    noisy = compare.artifact_record(ARTIFACT, side(), side(values=(9.0, 4.1)))  # the same answers, values too far apart
    assert not noisy["agree"] and noisy["values"]["within"] is False
    assert "file" not in record["evaluate"]["aarch64"]  # the TSV's path differs between the two sides
    assert not compare.artifact_record(ARTIFACT, side(answers=("9", "5")), side())["agree"]
    assert not compare.artifact_record(ARTIFACT, side(predict="3 - -2 + 4 = 8"), side())["agree"]
    lower = compare.artifact_record(ARTIFACT, side(exact=0.5), side())
    assert not lower["agree"] and lower["evaluate"]["exact_change"] == -0.5
    calculator = artifacts.Artifact("calculator/model.tflite", Path("c.tflite"), "LiteRT", "calculator")
    arm, host = side(), side()
    arm["values"] = host["values"] = None
    assert "values" not in compare.artifact_record(calculator, arm, host)


def test_a_command_that_fails_on_one_side_is_recorded_not_compared():
    failed = compare.artifact_record(ARTIFACT, {"error": "predcalc predict exited with SIGSEGV: "}, side())
    assert failed["agree"] is False and failed["error"] == {"aarch64": "predcalc predict exited with SIGSEGV: "}
    total = compare.summary([failed, compare.artifact_record(ARTIFACT, side(), side())], [])
    assert total["failed"] == [ARTIFACT.name] and total["answers"] == 2 and total["agree"] == 1


def test_the_summary_and_the_result_lines_come_from_the_records():
    checked = [
        compare.artifact_record(ARTIFACT, side(), side(values=(9.0, 4.0))),
        compare.artifact_record(dataclasses.replace(ARTIFACT, name="b"), side(answers=("9", "5")), side()),
    ]
    skipped = [{"name": "t/model_float32.tflite", "file": "f", "reason": "no file f"}]
    total = compare.summary(checked, skipped)
    assert total == {
        "checked": 2,
        "agree": 1,
        "failed": [],
        "answers_identical": 3,
        "answers": 4,
        "disagree": [
            {
                "name": "b",
                "answers_differ": 1,
                "n": 2,
                "exact_aarch64": 1.0,
                "exact_x86_64": 1.0,
                "values_differ": 0,
                "max_abs_diff": 0.0,
                "tolerance": pytest.approx(9e-3),
                "value_diff_where_answers_differ": [0.0, 0.0],
            }
        ],
        "max_abs_diff_agreeing": 0.0,
        "skipped": ["t/model_float32.tflite"],
        "not_recommended": [],
    }
    record = {
        "aarch64": {
            "uname_m": "aarch64",
            "python": "3.11.2",
            "python_minor": "3.11",
            "runtime_packages": {"numpy": "2.4.6"},
        },
        "root": {"suite": "bookworm"},
        "summary": total,
        "pins": [
            {"requirement": "numpy==2.4.6", "python": "3.11", "wheel": "w"},
            {"requirement": "numpy==2.2.6", "python": "3.10", "error": "no aarch64 wheel for Python 3.10"},
        ],
    }
    text = " ".join(result.result_lines(record))
    assert "`aarch64`" in text and "1 of 2 recommended artifacts" in text and "3 of 4 answers" in text
    assert "`b` differs: 1 of 2 answers, exact accuracy 100.0\u00a0% on aarch64 against 100.0\u00a0%" in text
    assert "Skipped (no file): t/model_float32.tflite" in text and "`max` CPU" not in text
    record["emulation"] = {
        "other_cpus": [
            {"cpu": "max", "name": "fnn2/model_int8.tflite", "predict": "3 - -2 + 4 = 4.7", "same_as_x86_64": False}
        ]
    }
    assert (
        "On qemu's `max` (qemu's default: SVE and int8 matrix multiply, which the Orin's cores lack) "
        "`fnn2/model_int8.tflite` printed `3 - -2 + 4 = 4.7`, unlike x86-64" in " ".join(result.result_lines(record))
    )
    assert "Pins without an aarch64 wheel: numpy==2.2.6 (Python 3.10): no aarch64 wheel for Python 3.10" in text
    record["aarch64_jetpack6_versions"] = None  # a run without them says so
    assert "did not install the versions JetPack 6's Python 3.10 pins give" in " ".join(result.result_lines(record))
    record["pins"].pop()
    record["aarch64_jetpack6_versions"] = {"runtime_packages": {"numpy": "2.2.6"}}
    record["artifacts"] = [{**checked[0], "jetpack6_versions": check.jetpack6_comparison(checked[0])}]
    text = " ".join(result.result_lines(record))
    assert "Every pin has its aarch64 wheel" in text and "no Python 3.10 ran them" in text
    assert "(numpy 2.2.6), on the root's Python 3.11.2: 1 of 1 recommended artifacts give the same answers" in text


def test_recommended_artifacts_skip_an_absent_file_with_the_reason(tmp_path):
    present = tmp_path / "01_fnn" / "export" / "fnn2"
    present.mkdir(parents=True)
    for name in ("model_float32.tflite", "model_float16.tflite", "model_int8_dynamic.tflite", "model.onnx"):
        (present / name).write_bytes(b"x")
    exports = {"01_fnn/export/fnn2": "default", "06_transformer/export/t4": "transformer"}
    found = artifacts.recommended_artifacts(
        runs=tmp_path, calculator=tmp_path / "calculator" / "model.tflite", exports=exports
    )
    assert [a.name for a in found] == [
        "calculator/model.tflite",
        "fnn2/model_float32.tflite",
        "fnn2/model_float16.tflite",
        "fnn2/model_int8_dynamic.tflite",
        "fnn2/model.onnx",
        "t4/model_float32.tflite",
        "t4/model.onnx",
    ]
    assert [a.runtime for a in found[1:5]] == ["LiteRT", "LiteRT", "LiteRT", "ONNX Runtime"]
    assert [a.name for a in found if a.not_recommended] == ["fnn2/model_int8_dynamic.tflite"]
    assert "dynamic-range int8" in found[3].not_recommended
    skipped = {a.name: a.skipped for a in found if a.skipped}
    assert set(skipped) == {"calculator/model.tflite", "t4/model_float32.tflite", "t4/model.onnx"}
    assert "no file" in skipped["t4/model.onnx"] and "predcalc export" in skipped["t4/model.onnx"]


def test_an_artifact_not_recommended_is_recorded_apart_with_what_differs():
    dynamic = artifacts.Artifact("fnn2/model_int8_dynamic.tflite", Path("d.tflite"), "LiteRT", "default", None, "why")
    arm = {**side(answers=("9", "5"), values=(9.1, 4.6)), "expressions": ["4 + 5", "2 + 2"]}
    host = {**side(answers=("9", "4"), values=(9.0, 4.4)), "expressions": ["4 + 5", "2 + 2"]}
    arm["values_builtin"], host["values_builtin"] = [9.05, 4.5], [9.05, 4.5]
    record = compare.artifact_record(dynamic, arm, host)
    assert record["recommended"] is False and record["not_recommended"] == "why" and not record["agree"]
    assert record["answers"]["differ"] == [
        {
            "expression": "2 + 2",
            "answer_aarch64": "5",
            "answer_x86_64": "4",
            "value_aarch64": 4.6,
            "value_x86_64": 4.4,
            "value_diff": pytest.approx(0.2),
        }
    ]
    assert record["builtin_kernels"]["x86_64_vs_aarch64"] == {"n": 2, "identical": 2, "max_abs_diff": 0.0}
    assert record["builtin_kernels"]["xnnpack_vs_builtin_max_abs_diff"] == {
        "aarch64": pytest.approx(0.1),
        "x86_64": pytest.approx(0.1),
    }
    total = compare.summary([compare.artifact_record(ARTIFACT, side(), side()), record], [])
    assert total["checked"] == 1 and total["agree"] == 1 and total["disagree"] == [] and total["answers"] == 2
    (other,) = total["not_recommended"]
    assert other["name"] == dynamic.name and other["answers_differ"] == 1 and other["values_differ"] == 2
    assert other["value_diff_where_answers_differ"] == [pytest.approx(0.2)] * 2
    assert other["builtin_kernels"]["values_differ"] == 0
    line = result.not_recommended_line(other)
    assert line.startswith("Checked, not recommended for the Jetson: `fnn2/model_int8_dynamic.tflite` (why): ")
    assert "1 of 2 answers differ" in line and "not a rounding tie" in line and "XNNPACK off" in line


def test_the_runtime_pins_are_chosen_by_python_version(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        "[project.optional-dependencies]\nruntime = [\"numpy==2.4.6; python_version >= '3.11'\","
        '"numpy==2.2.6; python_version < \'3.11\'", "onnxruntime==1.23.2"]\n'
    )
    assert wheels.runtime_requirements("3.11", pyproject) == ["numpy==2.4.6", "onnxruntime==1.23.2"]
    assert wheels.runtime_requirements("3.10", pyproject) == ["numpy==2.2.6", "onnxruntime==1.23.2"]
    for version in ("3.10", "3.11"):  # the project's own extra: one pin of each runtime package per Python
        names = sorted(r.split("==")[0] for r in wheels.runtime_requirements(version))
        assert names == sorted(settings.RUNTIME_PACKAGES), (version, names)


def test_manylinux_platforms_stop_at_the_glibc_version():
    platforms = wheels.manylinux_platforms((2, 35))
    assert platforms[0] == "manylinux_2_35_aarch64" and "manylinux_2_17_aarch64" in platforms
    assert "manylinux_2_36_aarch64" not in platforms and platforms[-1] == "manylinux2014_aarch64"


def _why_not_aarch64() -> str | None:
    """Why the emulated check cannot run here (None where it can)."""
    if os.geteuid() != 0:
        return "needs root (chroot and mount)"
    binfmt = Path("/proc/sys/fs/binfmt_misc/qemu-aarch64")
    if platform.machine() != "aarch64" and not (binfmt.is_file() and binfmt.read_text().startswith("enabled")):
        return "qemu-user for aarch64 is not registered with binfmt_misc (apt-get install qemu-user-static)"
    if not (command.default_root() / settings.ROOT_MARKER).is_file():
        return f"no cached arm64 root at {command.default_root()} (make jetson-check builds it)"
    return None


@pytest.mark.slow
@pytest.mark.skipif(_why_not_aarch64() is not None, reason=str(_why_not_aarch64()))
def test_the_calculator_and_one_litert_file_answer_the_same_on_aarch64(tmp_path):
    wanted = ("calculator/model.tflite", "fnn2/model_float32.tflite")
    found = [a for a in artifacts.recommended_artifacts() if a.name in wanted and not a.skipped]
    if len(found) < 2:
        pytest.skip("the calculator or fnn2's LiteRT file is not in reports/")
    record = check.check(
        command.default_root(),
        tmp_path / "jetson_check.json",
        artifacts=found,
        progress=False,
        log_path=tmp_path / "log.txt",
        build=False,
        jetpack6_versions=False,
    )
    assert record["aarch64"]["uname_m"] == "aarch64"
    assert record["aarch64"]["heavy_packages"] == []
    assert [a["name"] for a in record["artifacts"]] == list(wanted)
    assert all(a["agree"] for a in record["artifacts"]), [a for a in record["artifacts"] if not a["agree"]]
    assert record["artifacts"][0]["predict"]["aarch64"].startswith("3 - -2 + 4 = 9 ")
    assert json.loads((tmp_path / "jetson_check.json").read_text())["summary"]["agree"] == 2


def test_the_deploy_guide_quotes_the_result_between_its_markers(tmp_path):
    readme = tmp_path / "deploy.md"
    readme.write_text(f"# x\n\n{settings.GUIDE_START}\nold\n{settings.GUIDE_END}\n\nafter\n")
    record = {"result": ["line one.", "line two."]}
    assert result.update_guide(record, readme)
    assert (
        readme.read_text()
        == f"# x\n\n{settings.GUIDE_START}\n- line one.\n- line two.\n{settings.GUIDE_END}\n\nafter\n"
    )
    (tmp_path / "other.md").write_text("no markers\n")
    assert not result.update_guide(record, tmp_path / "other.md")


def test_the_aarch64_cpuinfo_names_an_arm_core_per_processor():
    text = root.arm_cpuinfo_text(3)
    assert text.count("processor\t: ") == 3 and "processor\t: 2\n" in text
    assert text.count("CPU implementer\t: 0x41\n") == 3 and "GenuineIntel" not in text


def test_paths_under_the_root_are_given_as_the_root_sees_them(tmp_path):
    arm64 = root.Root(tmp_path / "arm64-root", tmp_path / "repo", log=None, log_path=tmp_path / "log")
    assert arm64.translate(tmp_path / "arm64-root" / "tmp" / "x.tsv") == "/tmp/x.tsv"
    assert arm64.translate(tmp_path / "repo" / "a.onnx") == tmp_path / "repo" / "a.onnx"
    assert arm64.translate("predict") == "predict"


def test_the_stored_record_checked_the_committed_files():
    """The deploy guide quotes ``reports/jetson_check.json``: every recommended artifact in it was checked
    with the bytes the repository holds now (rerun ``make jetson-check`` after re-exporting one)."""
    record = json.loads((ROOT / "reports" / "jetson_check.json").read_text())
    present = [a for a in record["artifacts"] if a.get("recommended") and (ROOT / a["file"]).is_file()]
    stale = [a["name"] for a in present if a.get("sha256") != artifacts.file_digest(ROOT / a["file"])]
    assert present and not stale, f"checked with other bytes than the repository's: {stale}"
