"""Render the report and comparison data into one self-contained HTML file.

Everything the page needs is inside it: the style sheet and the script (``assets/``), the
data as a JSON ``<script>`` block, and the figures from :mod:`ragstage.plots` as inline SVG.
Opening the file makes no request at all, so it can be mailed or attached to a ticket.
The script builds the tables from the data and renders only the rows on screen (one page
of the question table at a time), which keeps a page of 100,000 questions responsive.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import re
from importlib import resources
from typing import Any, Iterable

import orjson

from ..plots import BUCKET_COLOURS, STAGE_LABELS

__all__ = ["render_page", "figure_svg", "content_policy"]

_ASSETS = resources.files("ragstage.html") / "assets"
_STYLE_ELEMENT = re.compile(r"<style\b[^>]*>(.*?)</style>", re.S)
_STYLE_ATTRIBUTE = re.compile(r'\sstyle="([^"]*)"')


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def content_policy(script: str, css: str, svgs: Iterable[str]) -> str:
    """The page's Content-Security-Policy: nothing loads from anywhere, and only what the page
    itself holds runs or styles it, each allowed by its hash (never ``'unsafe-inline'``).

    Allowed: the one script and the one style sheet; each figure's ``<style>`` blocks and the
    ``style`` attributes matplotlib writes on its SVG elements (``'unsafe-hashes'`` lets a style
    attribute match a hash; no script attribute can). ``base-uri`` and ``form-action`` are
    ``'none'``, so an injected ``<base>`` or form could neither redirect links nor post data.
    """
    styles = {css}
    for svg in svgs:
        styles.update(_STYLE_ELEMENT.findall(svg))
        styles.update(html.unescape(v) for v in _STYLE_ATTRIBUTE.findall(svg))
    style_hashes = " ".join(sorted(_hash(text) for text in styles))
    return (f"default-src 'none'; script-src {_hash(script)}; style-src 'unsafe-hashes' {style_hashes}; "
            "img-src data:; base-uri 'none'; form-action 'none'")


def figure_svg(fig: Any, prefix: str) -> str:
    """A matplotlib figure as inline SVG markup; its ids get ``prefix`` so figures on one page never clash."""
    from matplotlib import rc_context

    buffer = io.StringIO()
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": "ragstage"}):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r'\bid="', f'id="{prefix}-', svg)
    svg = re.sub(r"url\(#", f"url(#{prefix}-", svg)
    return re.sub(r'href="#', f'href="#{prefix}-', svg)


def _json_for_script(data: dict[str, Any]) -> str:
    """JSON that cannot end the ``<script>`` element it sits in (``<``, ``>``, ``&`` escaped)."""
    raw = orjson.dumps({k: v for k, v in data.items() if not k.startswith("_")}, option=orjson.OPT_NON_STR_KEYS)
    return raw.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026").decode()


def render_page(data: dict[str, Any], title: str, figures: Iterable[tuple[str, str, str]] = ()) -> str:
    """The page: ``data`` (from :mod:`ragstage.html.data`), and ``(id, caption, svg)`` figures."""
    data = {**data, "colours": BUCKET_COLOURS, "labels": STAGE_LABELS}
    css = (_ASSETS / "page.css").read_text(encoding="utf-8")
    script = (_ASSETS / "page.js").read_text(encoding="utf-8")
    figures = list(figures)
    policy = content_policy(script, css, (svg for _, _, svg in figures))
    blocks = "\n".join(f'<figure id="{fid}"><div class="svg">{svg}</div><figcaption>{html.escape(caption)}'
                       f"</figcaption></figure>" for fid, caption, svg in figures)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{policy}">
<title>{html.escape(title)}</title>
<style>{css}</style>
</head>
<body class="{data["kind"]}">
<header><h1>{html.escape(title)}</h1><p id="subtitle"></p></header>
<main>
<div id="empty" hidden></div>
<section id="overview"></section>
<section id="figures">{blocks}</section>
<section id="tables"></section>
<section id="questions"></section>
</main>
<script type="application/json" id="ragstage-data">{_json_for_script(data)}</script>
<script>{script}</script>
</body>
</html>
"""
