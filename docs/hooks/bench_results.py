"""MkDocs hook: a ``<!-- bench-result: FILE.json -->`` line in a page under docs/ becomes the
tables of that result file (a path relative to the page), with the machine, the commit and
the command that reruns it (``adapath.bench.result.markdown``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

MARKER = re.compile(r"^<!-- bench-result: (\S+) -->$", re.M)


def on_page_markdown(markdown, page, config, files):
    from adapath.bench.result import markdown as render

    folder = Path(config["docs_dir"]) / Path(page.file.src_path).parent

    def table(match):
        path = folder / match.group(1)
        return render(json.loads(path.read_text()))  # a missing file stops the build

    return MARKER.sub(table, markdown)
