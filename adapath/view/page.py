"""One self-contained HTML file: the template, our CSS and JavaScript, and the data as JSON.

The page fetches nothing: its Content-Security-Policy is ``default-src 'none'`` with the
inline script and style allowed only by their SHA-256 hashes, and the data travels inside a
``<script type="application/json">`` element that the page parses once.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from importlib.resources import files
from pathlib import Path

from adapath.fsutil import atomic_file

_SCRIPTS = {"questions": ("draw.js", "questions.js"), "bank": ("draw.js", "bank.js")}


def _static(name: str) -> str:
    return files("adapath.view").joinpath("static", name).read_text(encoding="utf-8")


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def embed_json(data) -> str:
    """JSON safe inside a <script> element: no '<' can close it or open a comment."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render_page(data: dict, title: str) -> str:
    script = "\n".join(_static(name) for name in _SCRIPTS[data["kind"]])
    style = _static("view.css")
    policy = f"default-src 'none'; script-src {_hash(script)}; style-src {_hash(style)}"
    parts = {"POLICY": html.escape(policy, quote=True), "TITLE": html.escape(title),
             "KIND": data["kind"], "STYLE": style, "DATA": embed_json(data), "SCRIPT": script}
    # One pass over the template, so text inside the data is never taken for a slot.
    return re.sub(r"\{\{([A-Z]+)\}\}", lambda m: parts[m.group(1)], _static("page.html"))


def write_page(data: dict, out: str | Path, title: str) -> Path:
    """Write the page under a temporary name and rename it into place."""
    out = Path(out)
    page = render_page(data, title)
    with atomic_file(out) as handle:
        handle.write(page)
    return out
