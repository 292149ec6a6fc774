"""Sphinx configuration of the workbook's website (built by ``python book/build.py``, ``make book``).

Sphinx with MyST-NB and the book theme (the stack of Jupyter Book 1) renders the manual's
Markdown pages (``docs/``) and the committed notebooks as they are: ``nb_execution_mode = "off"``,
nothing is re-executed. Everything a
page loads is in the built folder: the Jupyter widgets' scripts, which MyST-NB would load
from a CDN, are left out (a widget needs a kernel; a note on the page says to open the
notebook), and the theme's fonts and icons ship with the theme.
"""

from __future__ import annotations

from pathlib import Path

project = "ragstage"
author = "ragstage contributors"
copyright = "ragstage contributors"
REPOSITORY = "https://github.com/ragstage/ragstage"
COLAB = "https://colab.research.google.com/github/ragstage/ragstage/blob/main"

extensions = ["myst_nb"]
root_doc = "index"
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
nb_execution_mode = "off"
nb_ipywidgets_js: dict[str, dict[str, str]] = {}
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
suppress_warnings = ["mystnb.unknown_mime_type"]

html_theme = "sphinx_book_theme"
html_title = "ragstage: which stage lost the answer"
html_static_path = [str(Path(__file__).parent / "_static")]
html_favicon = str(Path(__file__).parent / "_static" / "favicon.png")
html_css_files = ["ragstage.css"]
html_js_files = ["ragstage.js"]
html_copy_source = False
html_last_updated_fmt = None
html_context = {"default_mode": "light"}  # the theme's colour mode before a reader picks one
html_theme_options = {
    "repository_url": REPOSITORY,
    "repository_branch": "main",
    "path_to_docs": "",
    "use_repository_button": True,
    "use_download_button": False,  # the page's own link downloads the notebook as committed
    "launch_buttons": {"colab_url": "https://colab.research.google.com"},
    "show_toc_level": 2,
}


def _open_links(app, pagename, templatename, context, doctree) -> None:
    """Put "Open in Colab" and "Download the notebook" at the top of every notebook page."""
    doc = Path(app.env.doc2path(pagename))
    if doc.suffix != ".ipynb" or "body" not in context:
        return
    path = doc.relative_to(app.srcdir).as_posix()  # as in the repository, e.g. notebooks/01_five_cases.ipynb
    name = doc.name  # build.py puts the committed notebook beside its page
    links = (f'<p class="ragstage-open"><a class="ragstage-colab" href="{COLAB}/{path}">Open in Colab</a>'
             f' · <a class="ragstage-download" href="{name}" download="{name}">Download the notebook</a></p>')
    context["body"] = links + context["body"]


def setup(app):
    app.connect("html-page-context", _open_links)
    return {"parallel_read_safe": True}
