"""Result files for evaluation: named, and each bound to the question set it answered.

- ``--results NAME=FILE`` names a file; files given the same NAME are pooled into one method
  (say one file per benchmark). A bare ``--results FILE`` is named by its lines' ``method``
  field (plus the parameters its settings file records that differ from the method's
  defaults, e.g. ``adapath (metapath=False)``), else by its file stem; bare files whose names
  collide take their file stems.
- Each file is scored against one of the ``--queries`` sets: the one its settings file
  (``FILE.settings.json``, written by ``adapath answer``) names, else the only set that holds
  every question id of the file.
- ``check_provenance`` refuses a file whose settings name a questions file none of the
  ``--queries`` is: the content checksum they record (the file may have moved), or, in
  settings written before checksums were recorded, the spec's path. Files without settings
  have nothing to compare and are bound by their ids. Question ids may repeat across sets (STaRK-Prime's
  synthesized and human sets both count from 0), so rows are keyed by (set, id, level).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from adapath.contract import Result
from adapath.datasets.specs import QuerySet
from adapath.errors import InputError
from adapath.jsonl import read_json_object


@dataclass
class ResultFile:
    name: str
    results: list[Result]
    path: Path | None = None
    settings: dict = field(default_factory=dict)  # the sidecar written by `adapath answer`, if any


def load_results(path: str | Path) -> list[Result]:
    from adapath.methods.run import load_results as load

    if not Path(path).is_file():
        raise InputError(f"{path}: no such result file")
    return load(path)


def parse_named(entries: list[str], flag: str = "--results") -> list[tuple[str | None, Path]]:
    """``NAME=FILE`` or a bare ``FILE`` (an existing file whose name holds ``=`` stays bare)."""
    out = []
    for entry in entries:
        name, sep, path = entry.partition("=")
        if sep and not Path(entry).exists():
            if not name or not path:
                raise InputError(f"{flag} {entry!r}: expected NAME=FILE or FILE")
            out.append((name, Path(path)))
        else:
            out.append((None, Path(entry)))
    return out


def _settings(path: Path) -> dict:
    from adapath.methods.run import settings_path

    sidecar = settings_path(path)
    if not sidecar.is_file():
        return {}
    return read_json_object(sidecar)


def derived_name(results: list[Result], path: Path, settings: dict) -> str:
    """The method field (with its non-default parameters from the settings), else the stem."""
    from adapath.methods.registry import all_methods

    methods = {r.method for r in results if r.method}
    if len(methods) != 1:
        return path.stem
    method = methods.pop()
    spec = all_methods().get(method)
    params = settings.get("params") or {}
    if spec is not None and isinstance(params, dict):
        defaults = {p.name: p.default for p in spec.params}
        changed = [f"{k}={v}" for k, v in params.items() if k in defaults and v != defaults[k]]
        if changed:
            return f"{method} ({', '.join(changed)})"
    return method


def load_result_files(entries: list[str], flag: str = "--results") -> list[ResultFile]:
    files = []
    for name, path in parse_named(entries, flag):
        results = load_results(path)
        if not results:
            raise InputError(f"{path}: holds no result lines")
        files.append(ResultFile(name or "", results, path, _settings(path)))
    explicit = {f.name for f in files if f.name}
    derived = {i: derived_name(f.results, f.path, f.settings) for i, f in enumerate(files) if not f.name}
    values = list(derived.values())
    for i, name in derived.items():
        files[i].name = files[i].path.stem if values.count(name) > 1 or name in explicit else name
    bare = [files[i].name for i in derived]
    for name in bare:
        if bare.count(name) > 1 or name in explicit:
            raise InputError(f"{flag}: two result files would both be named {name!r}; "
                             f"name them with {flag} NAME=FILE")
    return files


def _same_spec(a: str, b: str) -> bool:
    if a == b:
        return True
    kind_a, _, rest_a = a.partition(":")
    kind_b, _, rest_b = b.partition(":")
    path_a, _, split_a = rest_a.partition("#")
    path_b, _, split_b = rest_b.partition("#")
    return kind_a == kind_b and split_a == split_b and bool(path_a) and Path(path_a).resolve() == Path(path_b).resolve()


def _split(spec: str) -> str:
    return spec.partition(":")[2].partition("#")[2]


def _recorded_match(f: ResultFile, query_sets: list[QuerySet]) -> list[QuerySet]:
    """The sets that are the questions file ``f``'s settings record (none recorded: [])."""
    named, checksum = f.settings.get("queries"), f.settings.get("queries_checksum")
    split = _split(named) if isinstance(named, str) else ""
    if isinstance(checksum, str):
        return [qs for qs in query_sets if qs.checksum() == checksum and _split(qs.spec) == split]
    if isinstance(named, str):
        return [qs for qs in query_sets if _same_spec(named, qs.spec)]
    return []


def check_provenance(files: list[ResultFile], query_sets: list[QuerySet]) -> None:
    """Refuse, in one line naming both, a result file made from another questions file than
    any ``--queries`` (eval's ``--allow-other-queries`` skips this check)."""
    for f in files:
        named = f.settings.get("queries")
        if not isinstance(named, str) or _recorded_match(f, query_sets):
            continue
        checksum = f.settings.get("queries_checksum")
        given = " or ".join(qs.spec for qs in query_sets)
        where = f.path or f.name
        if not isinstance(checksum, str):
            what = f"answered {named} (its settings, from before checksums were recorded, name that path)"
        elif any(_same_spec(named, qs.spec) for qs in query_sets):
            what = f"answered {named} as it was then (checksum {checksum[:12]}); that file has changed since"
        else:
            what = f"answered {named} (checksum {checksum[:12]})"
        raise InputError(f"{where}: {what}, not --queries {given}; pass --allow-other-queries to score it "
                         "against them anyway")


def check_graph(files: list[ResultFile], graph, kg) -> None:
    """Refuse a result file its settings say was answered on another graph than ``kg``'s: its
    paths and valid answers would be read against the wrong nodes."""
    if graph is None:
        return
    for f in files:
        answered_on = f.settings.get("graph_checksum")
        if isinstance(answered_on, str) and answered_on != graph.checksum():
            raise InputError(f"{f.path or f.name}: answered on another graph (checksum {answered_on[:12]}, "
                             f"{kg} has {graph.checksum()[:12]}); give the --kg it was answered on")


def bind(files: list[ResultFile], query_sets: list[QuerySet]) -> list[tuple[ResultFile, QuerySet]]:
    """Each file with the question set it answered (see the module docstring)."""
    if not query_sets:
        raise InputError("--queries is required: the question set(s) with gold answers")
    bound = []
    id_sets = [{item.id for item in qs.items} for qs in query_sets]
    for f in files:
        where = f.path or f.name
        chosen = _recorded_match(f, query_sets)
        if not chosen:
            ids = {r.id for r in f.results}
            chosen = [qs for qs, known in zip(query_sets, id_sets) if ids <= known]
            if not chosen:
                best = max(range(len(query_sets)), key=lambda i: len(ids & id_sets[i]))
                missing = sorted(ids - id_sets[best])[0]
                raise InputError(f"{where}: result {missing!r} has no question in "
                                 f"{' or '.join(qs.spec for qs in query_sets)}")
            if len(chosen) > 1:
                raise InputError(f"{where}: its question ids are in {chosen[0].spec} and {chosen[1].spec}; "
                                 "keep the settings file `adapath answer` wrote beside it, or evaluate one "
                                 "question set at a time")
        bound.append((f, chosen[0]))
    return bound
