"""The book (``make book``): number formatting, the pages it writes (the hand-written findings,
the Appendix, every notebook, the docs), and the built site in a real browser (headless Chromium
driven by Selenium, skipped when none is installed)."""

import base64
import functools
import http.server
import io
import json
import os
import shutil
import threading
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from predcalc import readable
from predcalc.report import book, book_notebooks, written
from predcalc.training.runner import discover

ROOT = Path(__file__).resolve().parents[1]
NBSP = "\u00a0"


def _png(width: int, height: int) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), (40, 90, 160)).save(out, format="PNG")
    return out.getvalue()


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


def test_figures_are_scaled_to_the_largest_side_shown():
    small, big = _png(800, 300), _png(1320, 2772)
    assert book_notebooks.fit(small) is small
    assert book_notebooks.png_size(book_notebooks.fit(big)) == (1143, 2400)


# --------------------------------------------------------------------------- pages


@pytest.fixture(scope="module")
def small_root(tmp_path_factory):
    """A repository with two notebooks (one executed, with a figure too tall to show whole), a
    findings page with its hand-written part, and no stored records."""
    nbformat = pytest.importorskip("nbformat")
    root = tmp_path_factory.mktemp("root")
    tall = base64.b64encode(_png(1320, 2772)).decode()
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
    (run / "run.json").write_text(json.dumps({"profile": "full", "seconds": 415.9, "finished": "2026-11-25T13:40"}))
    (root / "reports" / "figures").mkdir()
    (root / "reports" / "figures" / "summary.png").write_bytes(_png(1200, 600))
    prose = "# Findings\n\n## Question\n\nWhich?\n\n![Summary](figures/summary.png)\n\n## Answer\n\nThis one.\n"
    (root / "reports" / "findings.md").write_text(f"{prose}\n{written.MARKER}\n\n# Appendix\n\nOld.\n")
    return root


@pytest.fixture(scope="module")
def small_book(small_root, tmp_path_factory):
    source = tmp_path_factory.mktemp("book_src")
    return source, book.write(source, small_root)


def test_the_book_holds_the_findings_the_appendix_every_notebook_and_the_docs(small_book):
    source, pages = small_book
    index = (source / "index.md").read_text()
    assert index.startswith("# Findings\n") and "## Answer\n\nThis one." in index and "Old." not in index
    assert book_notebooks.png_size((source / "figures" / "summary.png").read_bytes()) == (1200, 600)
    appendix = (source / "appendix.md").read_text()
    assert appendix.startswith("# Appendix") and "[01_fnn](runs/01_fnn/01_fnn.ipynb)" in appendix
    assert "20_vanishing_gradients (not run)" in appendix  # no executed copy: not linked
    assert pages[:4] == ["index", "appendix", "architectures", "studies"]
    assert "runs/01_fnn/01_fnn" in pages and "runs/20_vanishing_gradients/20_vanishing_gradients" in pages
    assert "(runs/01_fnn/01_fnn.ipynb)" in (source / "architectures.md").read_text()
    docs = sorted(p.stem for p in (ROOT / "docs").glob("*.md"))
    assert docs and all(f"docs/{name}" in pages for name in docs)
    assert "](../" not in "".join((source / "docs" / f"{name}.md").read_text() for name in docs)
    assert "Using the code" in index


def test_notebook_pages_fit_their_figures_and_a_source_says_it_was_not_run(small_book):
    source, _ = small_book
    page = json.loads((source / "runs/01_fnn/01_fnn.ipynb").read_text())
    (png,) = [o["data"]["image/png"] for c in page["cells"] for o in c.get("outputs", [])]
    assert book_notebooks.png_size(base64.b64decode(png)) == (1143, 2400)
    assert "No executed copy" not in json.dumps(page)
    fallback = json.loads((source / "runs/20_vanishing_gradients/20_vanishing_gradients.ipynb").read_text())
    assert "".join(fallback["cells"][1]["source"]) == book.NOT_RUN


def test_every_notebook_has_a_page(tmp_path):
    pytest.importorskip("nbformat")
    pages = book.write(tmp_path / "src", ROOT)
    names = sorted(p.stem for p in discover(directory=ROOT / "notebooks"))  # a template runs as its aliases
    assert names and all(f"runs/{name}/{name}" in pages for name in names)
    for name in names:
        notebook = json.loads((tmp_path / "src" / "runs" / name / f"{name}.ipynb").read_text())
        for cell in notebook["cells"]:
            for output in cell.get("outputs", []):
                assert "application/vnd.jupyter.widget-view+json" not in output.get("data", {})
                if "image/png" in output.get("data", {}):
                    side = max(book_notebooks.png_size(base64.b64decode(output["data"]["image/png"])))
                    assert side <= book_notebooks.MAX_SIDE


def test_a_reader_sees_no_runtime_noise_reprs_or_nbval_markers(tmp_path):
    nbformat = pytest.importorskip("nbformat")
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
    cell = book_notebooks.reader_copy(tmp_path / "n.ipynb").cells[0]
    assert cell.source == "steps.write_metrics(output)"
    assert [o.get("text") or o["data"]["text/plain"] for o in cell.outputs] == ["kept line\n", "42"]


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
def site(tmp_path_factory):
    pytest.importorskip("myst_nb", reason="the book needs Sphinx and MyST-NB (requirements.txt)")
    out = tmp_path_factory.mktemp("book")
    source = tmp_path_factory.mktemp("book_src")
    start = time.perf_counter()
    index, written = book.build(out, source)
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
def test_every_page_loads_with_title_figures_and_working_links(site, browser):
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
            elif max(natural, height) > book_notebooks.MAX_SIDE:
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
