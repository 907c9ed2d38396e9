"""Self-contained HTML pages of what a method did (``adapath view``) and of a Path-Bank
(``adapath bank view``): data extracted here, drawn in the browser by our own SVG code."""

from __future__ import annotations

import os
from pathlib import Path

from adapath.view.extract import bank_page_data, load_questions, question_page_data
from adapath.view.page import render_page, write_page

__all__ = ["bank_page_data", "load_questions", "question_page_data", "render_page",
           "write_bank_page", "write_page", "write_question_page"]


def write_question_page(runs: dict[str, list], items: list, graph, out: str | Path,
                        title: str = "adapath view", settings: dict[str, dict] | None = None) -> dict:
    """Write the question viewer for ``runs`` (method name -> ``Result`` list) over the
    questions ``items``; returns the page's data. Paths in the settings are shown relative to
    the page (``page_relative``)."""
    folder = Path(out).resolve().parent
    settings = {m: {k: page_relative(v, folder) for k, v in s.items()} for m, s in (settings or {}).items()}
    data = question_page_data(runs, items, graph, settings)
    write_page(data, out, title)
    return data


def page_relative(value, folder: Path):
    """A settings value as a page in ``folder`` shows it: an absolute path (a bank, a model, a
    topics file; or the path of a query spec such as ``biostrat:/data/test.jsonl``) relative
    to the page's folder, so the page does not carry where the files lie on this machine;
    anything else as it is."""
    if not isinstance(value, str):
        return value
    kind, sep, rest = value.partition(":")
    prefix, path = (kind + sep, rest) if sep and os.path.isabs(rest) and "/" not in kind else ("", value)
    if not os.path.isabs(path):
        return value
    try:
        return prefix + os.path.relpath(path, folder)
    except ValueError:  # another drive (Windows): its name only
        return prefix + Path(path).name


def write_bank_page(bank: str | Path, out: str | Path, graph=None, sample: int = 40, seed: int = 0,
                    title: str | None = None) -> dict:
    """Write the Path-Bank viewer; returns its data. The title, unless given, names the bank
    by its folder and the folder holding it (``Path-Bank: demo/bank``)."""
    data = bank_page_data(bank, graph, sample=sample, seed=seed)
    where = Path(bank).resolve()
    write_page(data, out, title or f"Path-Bank: {where.parent.name + '/' if where.parent.name else ''}{where.name}")
    return data
