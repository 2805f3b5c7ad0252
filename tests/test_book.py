"""The book (``make book``): number formatting, the pages it writes from the findings Document,
and the built site in a real browser (headless Chromium driven by Selenium, skipped when none is
installed)."""

import base64
import functools
import http.server
import inspect
import io
import json
import os
import shutil
import threading
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pandas as pd
import pytest

from predcalc import readable
from predcalc.report import book, book_cells
from predcalc.report.document import Bullets, Document, Figure, Section, Table, Text
from predcalc.training.runner import discover, notebook_groups

ROOT = Path(__file__).resolve().parents[1]
NBSP = "\u00a0"

# The section keys of the findings Document (the contract between findings.py and book.py).
MAIN_KEYS = {
    "question": [],
    "answer": [],
    "method": ["method.protocol", "method.models", "method.mechanisms", "method.selection", "method.statistics"],
    "results": [
        "results.summary",
        "results.edges",
        "results.calculator",
    ],
    "limitations": [],
}
APPENDIX_KEYS = [
    "appendix.selection",
    "appendix.budgets",
    "appendix.data_seeds",
    "appendix.reference_protocol",
    "appendix.published",
    "appendix.extended",
    "appendix.all_models",
    "appendix.reference_way",
    "appendix.recipe",
    "appendix.stability",
    "appendix.development_edges",
    "appendix.trained_exact",
    "appendix.export",
    "appendix.llm",
    "appendix.bench",
    "appendix.studies",
    "appendix.calculator",
    "appendix.runs",
]


EXPORTS = pd.DataFrame(
    {
        "model": ["FNN2", "FNN2", "scan", "scan"],
        "format": ["float32", "int8", "float32", "onnx"],
        "KB": [26.04, 17.5, 3.2, float("nan")],
        "max abs diff": [1e-5, 0.9, 2e-6, float("nan")],
        "acc change in": [0.0, -0.017, 0.0, float("nan")],
        "acc change out": [0.0, -0.011, 0.001, float("nan")],
        "acc change long": [0.0, -0.006, 0.0, float("nan")],
        "verdict": ["use", "unsuitable", "use", "unsuitable"],
        "why": ["", "int8 input and output", "", "the export failed"],
    }
)


def _png(width: int, height: int) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), (40, 90, 160)).save(out, format="PNG")
    return out.getvalue()


def contract_document(root: Path, figure: Path, big_figure: Path) -> Document:
    """A Document with every key of the contract, tables of raw numbers, figures (one larger
    than the book shows) and links written relative to ``reports/``, as findings.md has them."""
    names = [p.stem for p in discover(directory=root / "notebooks")]
    frame = pd.DataFrame(
        {
            "model": ["transformer4_local_bounded", "fnn2"],
            "source": ["06_transformer (full)"] * 2,
            "params": [81_921, 1_201],
            "acc in": [1.0, 0.99997],
            "acc out": [0.4591, 0.0],
            "MAE out": [4.179e-07, 2.474],
            "score": [1.36e14, 1.084],
            "p": [6.9e-07, 0.39],
        }
    )

    def text(key):
        return Text(f"What `{key}` says, citing [the transformer](runs/06_transformer/06_transformer.ipynb).")

    def section(key, subkeys, part="main"):
        blocks = [text(key)]
        if key == "answer":
            blocks = [Bullets([f"claim {i}, in its box" for i in range(8)])]
        if key in ("method.models", "appendix.all_models"):
            blocks.append(Table(frame, caption="Means over 5 seeds."))
        if key == "appendix.export":
            blocks.append(Table(EXPORTS))
        if key == "results.summary":
            blocks.append(Figure(figure, "Exact accuracy against distance from the training box."))
        if key == "results.edges":
            blocks.append(Figure(big_figure, "A figure taller than the book shows it."))
        subs = [section(k, [], part) for k in subkeys]
        return Section(key, key.split(".")[-1].replace("_", " ").capitalize(), blocks, part, subsections=subs)

    sections = [section(k, subs) for k, subs in MAIN_KEYS.items()]
    groups = notebook_groups(root / "notebooks")
    studies = [n for n in names if n in groups["studies"]]
    for key in APPENDIX_KEYS:
        sections.append(section(key, [], "appendix"))
        if key == "appendix.studies":
            sections[-1].subsections = [
                Section(f"{key}.{n}", f"Study {n}", [text(n)], "appendix", [n]) for n in studies
            ]
    rows = {n: frame.assign(model=[f"{n}_a", f"{n}_b"]) for n in names if n in groups["architectures"]}
    return Document(
        "Findings",
        sections,
        "Built from the runs.",
        facts={"rows_by_notebook": rows, "notebooks": {n: f"runs/{n}" for n in names}},
    )


def _keys(doc: Document) -> set[str]:
    return {s.key for top in doc.sections for s in top.walk()}


# --------------------------------------------------------------------------- numbers


def test_numbers_are_formatted_for_people():
    assert readable.percent(0.9997) == f"99.97{NBSP}%"  # short of 1: never written 100.0 %
    assert readable.percent(0.99999) == f"99.999{NBSP}%"
    assert readable.percent(1.0) == f"100.0{NBSP}%"
    assert readable.percent(0.0001) == f"0.01{NBSP}%" and readable.percent(0.0) == f"0.0{NBSP}%"
    assert readable.percent(0.4591) == f"45.9{NBSP}%"
    assert readable.number(0.06512) == "0.0651"
    assert readable.number(2.474) == "2.47"
    assert readable.number(409.8) == "410"
    assert readable.number(3.447e6) == "3,450,000"
    assert readable.number(4.179e-07) == f"4.2{NBSP}×{NBSP}10⁻⁷"
    assert readable.number(1e-05) == f"1.0{NBSP}×{NBSP}10⁻⁵"
    assert readable.number(float("inf")) == "∞"
    assert readable.score(1.36e14) == "unbounded"
    assert readable.score(7.03e5) == "703,000"
    assert readable.score(1.084) == "1.08"
    assert readable.p_value(6.9e-07) == "< 0.001"
    assert readable.p_value(0.39) == "0.39"
    assert readable.points(-0.0012) == f"-0.1{NBSP}pt" and readable.points(-0.0001) == f"0.0{NBSP}pt"


def test_cells_follow_their_column():
    assert book_cells.cell(0.5, "acc out") == f"50.0{NBSP}%"
    assert book_cells.cell(0.002, "acc change in") == f"+0.2{NBSP}pt"
    assert book_cells.cell(81921, "params") == "81,921"
    assert book_cells.cell(1.36e14, "score") == "unbounded"
    assert book_cells.cell(4.179e-07, "MAE out") == f"4.2{NBSP}×{NBSP}10⁻⁷"
    assert book_cells.cell("0.0 to 75.5 %", "interval") == "0.0 to 75.5 %"
    assert book_cells.cell(None, "acc in") == "" and book_cells.cell(float("nan"), "MAE in") == ""
    assert book_cells.cell(True, "exported") == "yes"
    custom = Table(pd.DataFrame({"acc in": [0.5]}), cell=lambda value, column: "kept")
    assert "kept" in book_cells.table_markdown(custom)  # a table's own format is its author's choice


def test_figures_are_scaled_to_the_largest_side_shown():
    small, big = _png(800, 300), _png(1320, 2772)
    assert book_cells.fit(small) is small
    assert book_cells.png_size(book_cells.fit(big)) == (1143, 2400)


# --------------------------------------------------------------------------- pages


def test_the_book_never_reads_findings_md():
    source = inspect.getsource(book)
    assert 'findings.md"' not in source and "findings.md'" not in source  # no path to it, only words
    for helper in ("sections", "find", "tables", "paragraphs", "notebook_of", "prose", "MATHJAX_CONFIG"):
        assert not hasattr(book, helper), f"book.{helper}: the markdown parsing is gone"


@pytest.fixture(scope="module")
def small_root(tmp_path_factory):
    """A repository with two notebooks (one executed, with a figure too tall to show whole) and no
    ``reports/findings.md``."""
    nbformat = pytest.importorskip("nbformat")
    root = tmp_path_factory.mktemp("root")
    figure, tall = _png(1200, 600), base64.b64encode(_png(1320, 2772)).decode()
    for name in ("01_fnn", "20_vanishing_gradients"):
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [
            nbformat.v4.new_markdown_cell(f"# {name[:2]} · Title of {name}\n\n**Question.** Why?"),
            nbformat.v4.new_code_cell(
                "plot()",
                outputs=[nbformat.v4.new_output("display_data", data={"image/png": tall, "text/plain": "<Figure>"})],
            ),
        ]
        (root / "notebooks").mkdir(exist_ok=True)
        nbformat.write(notebook, root / "notebooks" / f"{name}.ipynb")
    groups = {"architectures": ["01_fnn"], "studies": ["20_vanishing_gradients"]}
    (root / "notebooks" / "index.json").write_text(json.dumps({"groups": groups}))
    shutil.copytree(ROOT / "docs", root / "docs")
    run = root / "reports" / "runs" / "01_fnn"
    run.mkdir(parents=True)
    shutil.copy(root / "notebooks" / "01_fnn.ipynb", run / "01_fnn.ipynb")
    (run / "run.json").write_text(
        json.dumps(
            {
                "profile": "full with models=['fnn2']",
                "seconds": 415.9,
                "finished": "2026-11-25T13:40",
                "overrides": {"models": ["fnn2"]},
            }
        )
    )
    (root / "reports" / "figures").mkdir()
    (root / "reports" / "figures" / "summary.png").write_bytes(figure)
    (run / "tall.png").write_bytes(_png(1320, 2772))
    assert not (root / "reports" / "findings.md").exists()
    return root


@pytest.fixture(scope="module")
def small_book(small_root, tmp_path_factory):
    doc = contract_document(
        small_root, small_root / "reports/figures/summary.png", small_root / "reports/runs/01_fnn/tall.png"
    )
    source = tmp_path_factory.mktemp("book_src")
    return doc, source, book.Book(doc, small_root).write(source)


def test_every_section_key_gets_a_page(small_book):
    doc, source, written = small_book
    placed = [key for keys in written.values() for key in keys]
    assert len(placed) == len(set(placed)), "a section on two pages"
    tops = {s.key for s in doc.sections}
    # a page shows a section with its subsections, so each key is placed itself or by its parent
    assert tops - {"appendix.studies"} <= set(placed)
    for key in _keys(doc):
        owners = [(len(k), p) for p, keys in written.items() for k in keys if key == k or key.startswith(k + ".")]
        page = max(owners)[1]  # its own page, else the page of its nearest placed parent
        suffix = ".ipynb" if page.startswith("runs/") else ".md"
        assert f"({key})=" in (source / f"{page}{suffix}").read_text(), f"{key} is not on {page}"
    assert written["runs/20_vanishing_gradients/20_vanishing_gradients"] == ["appendix.studies.20_vanishing_gradients"]


def test_pages_take_their_content_from_the_document(small_book):
    _, source, written = small_book
    index = (source / "index.md").read_text()
    assert "What `question` says" in index and index.count("\n- claim ") == 8
    results = (source / "results.md").read_text()
    assert results.startswith("(results)=\n# Results") and "## Summary" in results
    assert "![" not in results and ":::{figure} figures/summary.png" in results
    assert "unbounded" in (source / "method.md").read_text()
    assert f"99.997{NBSP}%" in (source / "method.md").read_text()
    assert set(written) >= {
        "index",
        "method",
        "results",
        "limitations",
        "appendix",
        "calculator",
        "llm",
        "deployment",
        "studies",
        "architectures",
        "reproduce",
    }
    assert written["deployment"] == ["appendix.export", "appendix.bench"]
    assert written["limitations"] == ["limitations"]


def test_the_export_table_is_a_grid_of_models_and_formats(small_book):
    _, source, _ = small_book
    deployment = (source / "deployment.md").read_text()
    assert "| model | float32 | int8 | onnx |" in deployment
    assert f"| FNN2 | 26.0{NBSP}KB, 0.0{NBSP}pt | 17.5{NBSP}KB, -1.7{NBSP}pt (unsuitable) |  |" in deployment
    assert f"| scan | 3.20{NBSP}KB, 0.0{NBSP}pt |  | no file (unsuitable) |" in deployment
    assert "- int8 input and output (1 file)" in deployment and "- the export failed (1 file)" in deployment


def test_a_renamed_heading_changes_only_the_title(small_root, tmp_path):
    doc = contract_document(
        small_root, small_root / "reports/figures/summary.png", small_root / "reports/runs/01_fnn/tall.png"
    )
    doc.section("results").title = "Outcomes"
    book.Book(doc, small_root).write(tmp_path)
    results = (tmp_path / "results.md").read_text()
    assert results.startswith("(results)=\n# Outcomes") and "figures/summary.png" in results


def test_notebook_pages_open_with_their_rows_and_fit_their_figures(small_book):
    _, source, _ = small_book
    page = json.loads((source / "runs/01_fnn/01_fnn.ipynb").read_text())
    summary = "".join(page["cells"][1]["source"])
    assert "In the findings" in summary and "01_fnn_a" in summary and "unbounded" in summary
    assert "| source |" not in summary  # the page is the source
    assert "profile `full`, 416 s, finished 2026-11-25" in summary
    assert "{ref}`list of runs <appendix.runs>`" in summary  # its own parameters: the exact command is there
    (png,) = [o["data"]["image/png"] for c in page["cells"] for o in c.get("outputs", [])]
    assert book_cells.png_size(base64.b64decode(png)) == (1143, 2400)
    assert book_cells.png_size((source / "runs/01_fnn/tall.png").read_bytes()) == (1143, 2400)
    fallback = "".join(
        json.loads((source / "runs/20_vanishing_gradients/20_vanishing_gradients.ipynb").read_text())["cells"][1][
            "source"
        ]
    )
    assert "No executed copy" in fallback and "Study 20_vanishing_gradients" in fallback


def test_every_notebook_has_a_page(tmp_path):
    pytest.importorskip("nbformat")
    (tmp_path / "wide.png").write_bytes(_png(1200, 500))
    (tmp_path / "tall.png").write_bytes(_png(1320, 2772))
    doc = contract_document(ROOT, tmp_path / "wide.png", tmp_path / "tall.png")
    written = book.Book(doc, ROOT).write(tmp_path / "src")
    names = sorted(p.stem for p in discover(directory=ROOT / "notebooks"))  # a template runs as its aliases
    assert names and all(f"runs/{name}/{name}" in written for name in names)
    for name in names:
        notebook = json.loads((tmp_path / "src" / "runs" / name / f"{name}.ipynb").read_text())
        for cell in notebook["cells"]:
            for output in cell.get("outputs", []):
                assert "application/vnd.jupyter.widget-view+json" not in output.get("data", {})
                if "image/png" in output.get("data", {}):
                    assert (
                        max(book_cells.png_size(base64.b64decode(output["data"]["image/png"]))) <= book_cells.MAX_SIDE
                    )


def test_a_reader_sees_no_runtime_noise_reprs_or_nbval_markers(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    from predcalc.report.book_notebooks import reader_copy

    retracing = (
        "WARNING:tensorflow:5 out of the last 7 calls to <function f at 0x7f> triggered tf.function retracing.\n"
    )
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "# NBVAL_CHECK_OUTPUT\nsteps.write_metrics(output)",
            outputs=[
                nbformat.v4.new_output("stream", name="stdout", text=f"kept line\n{retracing}"),
                nbformat.v4.new_output("stream", name="stdout", text="INFO:tensorflow:Assets written to: x/assets\n"),
                nbformat.v4.new_output("stream", name="stderr", text="W0000 00:00:1.5  12 cuda stub\n"),
                nbformat.v4.new_output("execute_result", data={"text/plain": "PosixPath('reports/x.json')"}),
                nbformat.v4.new_output("execute_result", data={"text/plain": "42"}),
            ],
        )
    ]
    nbformat.write(notebook, tmp_path / "n.ipynb")
    cell = reader_copy(tmp_path / "n.ipynb").cells[0]
    assert cell.source == "steps.write_metrics(output)"
    assert [o.get("text") or o["data"]["text/plain"] for o in cell.outputs] == ["kept line\n", "42"]


def test_the_docs_pages_are_in_the_book_with_links_that_resolve_there(small_book):
    doc, source, written = small_book
    pages = sorted(p.stem for p in (ROOT / "docs").glob("*.md"))
    assert pages and all(f"docs/{name}" in written for name in pages)
    assert all((source / "docs" / f"{name}.md").is_file() for name in pages)
    assert "](../" not in "".join((source / "docs" / f"{name}.md").read_text() for name in pages)
    assert "Using the code" in (source / "index.md").read_text()


# --------------------------------------------------------------------------- the site in a browser


def _browser():
    """Paths of the Chromium binary and its driver, or a reason to skip."""
    binary = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    driver = shutil.which("chromedriver")
    if (not binary or not driver) and os.environ.get("PREDCALC_REQUIRE_BROWSER"):
        pytest.fail("PREDCALC_REQUIRE_BROWSER is set but Chromium or chromedriver is missing")
    if not binary or not driver:
        return (
            None,
            None,
            (
                "no headless browser: the browser test needs Chromium and its driver "
                "(Debian: apt-get install chromium chromium-driver)"
            ),
        )
    return binary, driver, None


@pytest.fixture(scope="module")
def document():
    """The findings built from the stored runs."""
    from predcalc.report.paper import build_document

    return build_document()


@pytest.fixture(scope="module")
def site(tmp_path_factory, document):
    pytest.importorskip("myst_nb", reason="the book needs Sphinx and MyST-NB (requirements.txt)")
    out = tmp_path_factory.mktemp("book")
    source = tmp_path_factory.mktemp("book_src")
    start = time.perf_counter()
    index, written = book.build(out, source, doc=document)
    seconds = time.perf_counter() - start
    assert index.exists()
    assert seconds < 300, f"the book took {seconds:.0f} s to build"
    return out, written


@pytest.fixture(scope="module")
def browser(site):
    binary, driver_path, reason = _browser()
    if reason:
        pytest.skip(reason)
    webdriver = pytest.importorskip("selenium.webdriver", reason="the browser test needs selenium (requirements.txt)")
    from selenium.webdriver.chrome.service import Service

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site[0])))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,1000",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    try:
        yield driver, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        driver.quit()
        server.shutdown()


class _Ids(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)


@functools.cache
def _ids(path: Path) -> frozenset:
    parser = _Ids()
    parser.feed(path.read_text(errors="replace"))
    return frozenset(parser.ids)


def _anchor(key: str) -> str:
    """The id Sphinx gives the target ``(key)=``."""
    return "".join(c if c.isalnum() else "-" for c in key.lower()).strip("-")


def _visit(driver, url):
    driver.get(url)
    for _ in range(100):
        if driver.execute_script("return document.readyState") == "complete":
            break
        time.sleep(0.05)
    time.sleep(0.3)  # MathJax typesets after load
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


@pytest.mark.slow  # builds the book and drives Chromium through every page
def test_every_page_loads_with_title_figures_and_working_links(site, browser, document):
    (out, written), (driver, base) = site, browser
    errors = _visit(driver, base + "index.html")
    assert not errors, f"index.html: console errors {errors}"
    chapters = driver.execute_script(
        "return [...document.querySelectorAll('.bd-sidebar-primary nav a.reference.internal')].map(a => a.href)"
    )
    chapters = list(dict.fromkeys(urlsplit(c)._replace(fragment="").geturl() for c in chapters))
    for page in written:
        if page != "index":
            assert base + f"{page}.html" in chapters, f"{page} is not in the contents"
    problems, links = [], set()
    for page, keys in written.items():  # every section key present has its anchor on its page
        for key in keys:
            if _anchor(key) not in _ids(out / f"{page}.html"):
                problems.append(f"{page}.html: no anchor for section {key}")
    for url in [base + "index.html"] + chapters:
        errors = url != base + "index.html" and _visit(driver, url)
        page = url[len(base) :]
        if errors:
            problems.append(f"{page}: console errors {errors}")
        heading = driver.execute_script(
            "const h = document.querySelector('article h1'); return h && h.offsetHeight > 0 ? h.textContent : ''"
        ).strip(" #¶")
        if not heading or heading not in driver.title:
            problems.append(f"{page}: no visible title (h1 {heading!r}, title {driver.title!r})")
        images = driver.execute_script(
            "return [...document.querySelectorAll('article img')].map(i => [i.getAttribute('src'), i.complete, "
            "i.naturalWidth, i.naturalHeight, i.clientWidth])"
        )
        for src, complete, natural, height, shown in images:
            if not complete or natural == 0:
                problems.append(f"{page}: figure {src} did not load")
            elif max(natural, height) > book_cells.MAX_SIDE:
                problems.append(f"{page}: figure {src} is {natural} x {height} px")
            elif shown == 0 or natural / shown > 3:  # the old 4004 px MAE strip was drawn at 1/4.4
                problems.append(f"{page}: figure {src} drawn at 1/{natural / max(shown, 1):.1f} of its size")
        if page.startswith("runs/"):
            name = Path(page).stem
            executed = ROOT / "reports" / "runs" / name / f"{name}.ipynb"
            source = executed if executed.exists() else ROOT / "notebooks" / f"{name}.ipynb"
            expected = json.dumps(json.loads(source.read_text())["cells"]).count('"image/png"')
            if len(images) < expected:
                problems.append(f"{page}: {len(images)} figures shown, the notebook has {expected}")
        links |= {
            (page, href)
            for href in driver.execute_script("return [...document.querySelectorAll('a[href]')].map(a => a.href)")
        }
    html = "".join((out / f"{page}.html").read_text() for page in written)
    for top in document.sections:
        for section in top.walk():
            for figure in (b for b in section.blocks if isinstance(b, Figure)):
                if Path(figure.path).name not in html:
                    problems.append(f"{section.key}: figure {Path(figure.path).name} is on no page")
    for page, href in sorted(links):
        parts = urlsplit(href)
        if not href.startswith(base):
            continue
        target = out / unquote(parts.path[len(urlsplit(base).path) :] or "index.html")
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            problems.append(f"{page}: broken link {href}")
        elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in _ids(target):
            problems.append(f"{page}: link {href} names no anchor on its page")
    assert not problems, "\n".join(problems)


LAYOUT = Path(__file__).parent / "browser" / "layout.js"  # what a reader would see clipped or covered
NOISE = ("WARNING:tensorflow", "INFO:tensorflow", "PosixPath(", "NBVAL_CHECK_OUTPUT", "absl::InitializeLog")


@pytest.mark.slow  # drives Chromium through every page at two window widths
@pytest.mark.parametrize("width", [1400, 1920])
def test_nothing_runs_under_the_contents_panel_and_no_table_is_clipped(site, browser, width):
    """At 1,400 and 1,920 px: no figure, table, cell or paragraph under the right-hand Contents panel
    or past the window, every table inside its column (scrolling where wider), and the panel's icon
    font loaded from the book itself."""
    (_, written), (driver, base) = site, browser
    driver.set_window_size(width, 1000)
    script = LAYOUT.read_text()
    problems = []
    try:
        for page in written:
            _visit(driver, base + f"{page}.html")
            problems += [f"{page} at {width} px: {line}" for line in driver.execute_script(script)]
        font = driver.execute_async_script(
            "const done = arguments[0]; document.fonts.load('900 16px \"Font Awesome 6 Free\"')"
            ".then(faces => done(faces.length), () => done(-1));"
        )
        assert font > 0, "the Contents panel's icon font (Font Awesome 6 Free) did not load"
    finally:
        driver.set_window_size(1280, 1000)
    assert not problems, "\n".join(problems)


@pytest.mark.slow  # reads the built book
def test_the_executed_cells_show_no_runtime_noise(site):
    out, written = site
    noisy = [
        f"{page}: {word}"
        for page in written
        for word in NOISE
        if word in (out / f"{page}.html").read_text(errors="replace")
    ]
    assert not noisy, noisy


def test_a_page_says_when_its_exports_were_remade_after_the_run(tmp_path):
    from predcalc.report.book_notebooks import Notebook

    folder = tmp_path / "runs" / "08_min_rnn"
    for model, created in (("gru", "2026-11-25T13:30:04+00:00"), ("lstm", "2026-11-22T10:00:00+00:00")):
        (folder / "export" / model).mkdir(parents=True)
        (folder / "export" / model / "export.json").write_text(json.dumps({"created": created}))
    executed = folder / "08_min_rnn.ipynb"
    executed.write_text(json.dumps({"metadata": {"papermill": {"end_time": "2026-11-23T14:51:28.1+00:00"}}}))
    page = Notebook("08_min_rnn", executed, True, "08", {}, "architectures")
    assert page.reexported == [{"model": "gru", "created": "2026-11-25"}]  # lstm predates the run
    executed.write_text("{}")  # no papermill end time: nothing to compare
    assert Notebook("08_min_rnn", executed, True, "08", {}, "architectures").reexported == []
