"""The book (``make book``): number formatting, the pages it writes, and the built site in a
real browser (headless Chromium driven by Selenium, skipped when none is installed)."""

import functools
import http.server
import json
import os
import re
import shutil
import threading
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from predcalc.report import book
from predcalc.training.runner import discover

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- numbers


def test_numbers_are_formatted_for_people():
    assert book.percent("99.97 %") == "100.0\u00a0%"
    assert book.percent("") == ""
    assert book.number("0.06512") == "0.0651"
    assert book.number("2.474") == "2.47"
    assert book.number("409.8") == "410"
    assert book.number("3.447e+06") == "3,450,000"
    assert book.number("4.179e-07") == "4.2\u00a0×\u00a010⁻⁷"
    assert book.number("1e-05") == "1.0\u00a0×\u00a010⁻⁵"
    assert book.number("inf") == "∞"
    assert book.score("1.36e+14") == "unbounded"
    assert book.score("7.03e+05") == "703,000"
    assert book.score("1.084") == "1.08"
    assert book.p_value("6.9e-07") == "< 0.001"
    assert book.p_value("0.39") == "0.39"


def test_prose_keeps_words_and_formats_numbers():
    text = "exact on 100.00 % in range, MAE out 1.06e-06 (score 3822, model e5)"
    assert book.prose(text) == "exact on 100.0\u00a0% in range, MAE out 1.1\u00a0×\u00a010⁻⁶ (score 3822, model e5)"


def test_findings_tables_parse():
    found = book.sections("# T\n\n## A\ntext\n\n| a | b |\n|---|---|\n| 1 | 2 % |\n\n## B\n```\n# not a heading\n```\n")
    assert [s.title for s in found] == ["T", "A", "B"]
    (table,) = book.tables(found[1].lines)
    assert table.header == ["a", "b"] and table.records() == [{"a": "1", "b": "2 %"}]
    assert any("# not a heading" in line for line in found[2].lines)


# --------------------------------------------------------------------------- pages


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    pytest.importorskip("nbformat")
    source = tmp_path_factory.mktemp("book_src")
    docs = book.Book(ROOT).write(source)
    return source, docs


def test_every_notebook_has_a_page(pages):
    source, docs = pages
    names = sorted(p.stem for p in discover(directory=ROOT / "notebooks"))  # a template runs as its aliases
    assert names and all(f"notebooks/{name}" in docs for name in names)
    for name in names:
        notebook = json.loads((source / "notebooks" / f"{name}.ipynb").read_text())
        assert "In the findings" in json.dumps(notebook) or "About this run" in json.dumps(notebook)
        for cell in notebook["cells"]:
            for output in cell.get("outputs", []):
                assert "application/vnd.jupyter.widget-view+json" not in output.get("data", {})


def test_chapters_show_no_raw_scientific_scores(pages):
    source, _ = pages
    results = (source / "results.md").read_text()
    for heading in ("Which model is exact", "How large are the errors", "Does it beat the seed",
                    "Threats to validity"):
        assert heading in results
    tables = "\n".join(line for line in results.splitlines() if line.startswith("|"))
    assert not re.search(r"\d\.\d+e[+-]\d+", tables), "a table still prints 1.36e+14-style numbers"
    assert not re.search(r"\d+\.\d\d\u00a0?%", tables), "a percentage with two decimals"
    assert "unbounded" in tables


# --------------------------------------------------------------------------- the site in a browser


def _browser():
    """Paths of the Chromium binary and its driver, or a reason to skip."""
    binary = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    driver = shutil.which("chromedriver")
    if (not binary or not driver) and os.environ.get("PREDCALC_REQUIRE_BROWSER"):
        pytest.fail("PREDCALC_REQUIRE_BROWSER is set but Chromium or chromedriver is missing")
    if not binary or not driver:
        return None, None, ("no headless browser: the browser test needs Chromium and its driver "
                            "(Debian: apt-get install chromium chromium-driver)")
    return binary, driver, None


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("myst_nb", reason="the book needs Sphinx and MyST-NB (requirements.txt)")
    out = tmp_path_factory.mktemp("book")
    start = time.perf_counter()
    index = book.build(out, tmp_path_factory.mktemp("book_src"))
    seconds = time.perf_counter() - start
    assert index.exists()
    assert seconds < 120, f"the book took {seconds:.0f} s to build"
    return out


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

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1280,1000"):
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


def _visit(driver, url):
    driver.get(url)
    for _ in range(100):
        if driver.execute_script("return document.readyState") == "complete":
            break
        time.sleep(0.05)
    time.sleep(0.3)  # MathJax typesets after load
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


@pytest.mark.slow  # builds the book and drives Chromium through every page
def test_every_chapter_loads_with_title_figures_and_working_links(site, browser):
    driver, base = browser
    errors = _visit(driver, base + "index.html")
    assert not errors, f"index.html: console errors {errors}"
    chapters = driver.execute_script(
        "return [...document.querySelectorAll('.bd-sidebar-primary nav a.reference.internal')].map(a => a.href)")
    chapters = list(dict.fromkeys(urlsplit(c)._replace(fragment="").geturl() for c in chapters))
    notebooks = sorted(p.stem for p in discover(directory=ROOT / "notebooks"))  # a template runs as its aliases
    for name in notebooks:
        assert base + f"notebooks/{name}.html" in chapters, f"{name} is not in the contents"
    for page in ("results", "architectures", "studies", "deployment", "reproduce", "findings"):
        assert base + f"{page}.html" in chapters
    problems, links = [], set()
    for url in [base + "index.html"] + chapters:
        errors = url != base + "index.html" and _visit(driver, url)
        page = url[len(base):]
        if errors:
            problems.append(f"{page}: console errors {errors}")
        heading = driver.execute_script("const h = document.querySelector('article h1'); "
                                        "return h && h.offsetHeight > 0 ? h.textContent : ''").strip(" #¶")
        if not heading or heading not in driver.title:
            problems.append(f"{page}: no visible title (h1 {heading!r}, title {driver.title!r})")
        images = driver.execute_script(
            "return [...document.querySelectorAll('article img')].map(i => [i.getAttribute('src'), i.complete, "
            "i.naturalWidth, i.clientWidth])")
        for src, complete, natural, shown in images:
            if not complete or natural == 0:
                problems.append(f"{page}: figure {src} did not load")
            elif shown == 0 or natural / shown > 3:  # the old 4004 px MAE strip was drawn at 1/4.4
                problems.append(f"{page}: figure {src} drawn at 1/{natural / max(shown, 1):.1f} of its size")
        if page.startswith("notebooks/"):
            name = Path(page).stem
            executed = ROOT / "reports" / "runs" / name / f"{name}.ipynb"
            source = executed if executed.exists() else ROOT / "notebooks" / f"{name}.ipynb"
            expected = json.dumps(json.loads(source.read_text())["cells"]).count('"image/png"')
            if len(images) < expected:
                problems.append(f"{page}: {len(images)} figures shown, the notebook has {expected}")
        if page == "results.html" and not images:
            problems.append("results.html: the MAE figure is missing")
        links |= {(page, href) for href in driver.execute_script(
            "return [...document.querySelectorAll('a[href]')].map(a => a.href)")}
    for page, href in sorted(links):
        parts = urlsplit(href)
        if not href.startswith(base):
            continue
        target = site / unquote(parts.path[len(urlsplit(base).path):] or "index.html")
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            problems.append(f"{page}: broken link {href}")
        elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in _ids(target):
            problems.append(f"{page}: link {href} names no anchor on its page")
    assert not problems, "\n".join(problems)
