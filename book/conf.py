# Sphinx configuration of the book (``make book``). predcalc.report.book copies this folder into
# build/book_src/, writes the pages beside it (the findings, the Appendix, every notebook, docs/)
# and runs Sphinx there; the look is here and in _static/predcalc.css.
from pathlib import Path

project = "predcalc"
author = "the predcalc project"
copyright = "the predcalc project"
html_title = "predcalc: a neural calculator"

extensions = ["myst_nb"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]

# The notebooks are the executed copies in reports/runs/: shown as they ran, never re-executed.
nb_execution_mode = "off"
nb_output_stderr = "remove"
nb_merge_streams = True
nb_render_markdown_format = "myst"  # the notebooks display markdown tables
nb_code_prompt_show = "Show code"
nb_code_prompt_hide = "Hide code"
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3

html_theme = "sphinx_book_theme"
html_theme_options = {
    "home_page_in_toc": True,
    "show_toc_level": 2,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "navigation_with_keys": False,
    "show_navbar_depth": 2,
}
html_context = {"default_mode": "light"}
html_favicon = "_static/favicon.svg"
# The header has the search field: the sidebar keeps the title and the chapters.
html_sidebars = {"**": ["navbar-logo.html", "sbt-sidebar-nav.html"]}
html_static_path = ["_static"]
html_css_files = ["predcalc.css"]
html_js_files = ["predcalc.js"]
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None

# MathJax 3 from the sphinx-mathjax-offline wheel (copied into _mathjax/ by the builder), so
# the formulas render without a network; the CDN otherwise. tex-svg.js draws glyphs as SVG:
# no web fonts to fetch.
if (Path(__file__).parent / "_mathjax" / "mathjax" / "tex-svg.js").exists():
    html_static_path.append("_mathjax")
    mathjax_path = "mathjax/tex-svg.js"
