"""A bank directory on disk: the Parquet schema, the manifest, parts named by batch, merge, read.

Layout:

- ``queries.parquet``: id, text per level, topic and answer ids and types, hops, template;
- ``parts/part-SSSSSSSS-EEEEEEEE.parquet``: the paths of the batch of queries S..E-1 (their
  places in the query file). A part's name follows from its batch alone, so any worker can
  write any batch without asking anyone for a number; it is written under a temporary name
  of its own and renamed, so it exists whole or not at all, and writing it twice (a retried
  task) leaves one copy. Its Parquet metadata lists the queries the batch finished (queries
  without a path included). Parts of older builds (``part-NNNNNN.parquet``) still count;
- ``paths.parquet``: every part merged in query order (written when every query is done);
- ``manifest.json``: parameters, package version, graph checksum, progress, stage seconds.

The queries a bank has finished are those its parts list, so a build killed at any moment
(driver or worker) resumes from what reached the disk.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from adapath.bank.query import TrainingQuery
from adapath.errors import InputError
from adapath.fsutil import atomic_file

FORMAT = "adapath-pathbank"
FINISHED_KEY = b"adapath.finished_queries"

PATH_SCHEMA = pa.schema([
    ("query_id", pa.string()),
    ("pair", pa.string()),
    ("topic_id", pa.int64()),
    ("answer_id", pa.int64()),
    ("hop", pa.int32()),
    ("rank", pa.int32()),
    ("cost", pa.float64()),
    ("node_ids", pa.list_(pa.int64())),
    ("relations", pa.list_(pa.string())),
    ("node_types", pa.list_(pa.string())),
    ("metapath", pa.string()),
    ("corridor_k", pa.int32()),
    ("fallback", pa.string()),
])
# Parts carry each row's place in the query file, so the merge needs no lookup.
PART_SCHEMA = PATH_SCHEMA.append(pa.field("order", pa.int64()))


def part_name(start: int, stop: int) -> str:
    """The part of the batch of queries ``start..stop-1`` (places in the query file)."""
    return f"part-{start:08d}-{stop:08d}.parquet"


def ids_checksum(ids: list[str]) -> str:
    return hashlib.blake2b("\n".join(ids).encode(), digest_size=12).hexdigest()


def queries_table(queries: list[TrainingQuery]) -> pa.Table:
    """``queries.parquet``: one row per training query, one text column per level."""
    levels = list(dict.fromkeys(level for q in queries for level in q.texts))
    columns: dict[str, list] = {"id": [q.id for q in queries]}
    for level in levels:
        columns[level] = [q.texts.get(level, "") for q in queries]
    columns.update({
        "topic_id": [q.topic_ids[0] for q in queries],
        "topic_type": [q.topic_type for q in queries],
        "answer_id": [q.answer_id for q in queries],
        "answer_type": [q.answer_type for q in queries],
        "hops": [q.hops for q in queries],
        "template_id": [q.template_id for q in queries],
    })
    return pa.table(columns)


@dataclass(frozen=True)
class BankStore:
    root: Path

    @property
    def manifest_file(self) -> Path:
        return self.root / "manifest.json"

    @property
    def queries_file(self) -> Path:
        return self.root / "queries.parquet"

    @property
    def paths_file(self) -> Path:
        return self.root / "paths.parquet"

    @property
    def parts_dir(self) -> Path:
        return self.root / "parts"

    # ------------------------------------------------------------ manifest and queries
    def read_manifest(self) -> dict | None:
        if not self.manifest_file.is_file():
            return None
        try:
            return json.loads(self.manifest_file.read_text())
        except json.JSONDecodeError as exc:
            raise InputError(f"{self.manifest_file}: not valid JSON ({exc.msg}, line {exc.lineno} "
                             f"column {exc.colno})") from None
        except OSError as exc:
            raise InputError(f"{self.manifest_file}: unreadable manifest ({exc})") from None

    def graph_checksum(self) -> str | None:
        """The checksum of the graph the bank was built on (None where its manifest names none)."""
        manifest = self.read_manifest()
        if manifest is None:
            raise InputError(f"{self.root}: not a Path-Bank (no manifest.json; run `adapath bank build`)")
        return manifest.get("graph_checksum")

    def check_graph(self, checksum: str, graph_dir: Path) -> None:
        """Refuse a bank built on another graph than ``graph_dir``'s (whose checksum is given)."""
        built_on = self.graph_checksum()
        if built_on is not None and built_on != checksum:
            raise InputError(f"{self.root}: this Path-Bank was built on another graph (checksum {built_on[:12]}, "
                             f"{graph_dir} has {checksum[:12]}); rebuild it with `adapath bank build --kg {graph_dir}`")

    def complete_for(self, parameters: dict, checksum: str, ids: list[str]) -> bool:
        """Does the folder hold a finished bank of these queries, this graph and these
        parameters (``BankConfig.signature``)? Then a build would only rewrite what is there."""
        manifest = self.read_manifest()
        return bool(manifest and manifest.get("complete")
                    and describe_mismatch(self, manifest, parameters, checksum, ids) is None)

    def write_manifest(self, manifest: dict) -> None:
        with atomic_file(self.manifest_file) as handle:
            handle.write(json.dumps(manifest, indent=2))

    def read_query_ids(self) -> list[str]:
        if not self.queries_file.is_file():
            return []
        return [str(v) for v in pq.read_table(self.queries_file, columns=["id"]).column("id").to_pylist()]

    def write_queries(self, table: pa.Table) -> None:
        _write_table(table, self.queries_file)

    # ------------------------------------------------------------ parts
    def create(self) -> None:
        self.parts_dir.mkdir(parents=True, exist_ok=True)

    def part_files(self) -> list[Path]:
        if not self.parts_dir.is_dir():
            return []
        return sorted(self.parts_dir.glob("part-*.parquet"))

    def write_part(self, name: str, rows: pa.Table, finished: list[str]) -> None:
        """One batch's rows (``PART_SCHEMA``: each with its ``order``) as the part ``name``,
        atomically."""
        table = rows.replace_schema_metadata({FINISHED_KEY: json.dumps(finished).encode()})
        _write_table(table, self.parts_dir / name)

    def finished_queries(self) -> set[str]:
        done: set[str] = set()
        for part in self.part_files():
            meta = pq.read_schema(part).metadata or {}
            done.update(json.loads(meta.get(FINISHED_KEY, b"[]")))
        return done

    def clear_strays(self) -> None:
        """Temporary files a killed writer left behind."""
        for stray in [*self.parts_dir.glob(".*.tmp"), *self.root.glob(".*.tmp")]:
            with contextlib.suppress(FileNotFoundError):
                stray.unlink()

    # ------------------------------------------------------------ merge and read
    def merge(self, ids: list[str]) -> None:
        """Every part as ``paths.parquet``, in query order (then pair, hop, rank)."""
        table = self._parts_table(keep=ids)
        table = table.sort_by([("order", "ascending"), ("pair", "ascending"),
                               ("hop", "ascending"), ("rank", "ascending")])
        _write_table(table.drop_columns(["order"]), self.paths_file)

    def read_paths(self, columns: list[str] | None = None) -> pa.Table:
        """The bank's paths: ``paths.parquet``, or the parts of a build still under way."""
        if self.paths_file.is_file():
            return pq.read_table(self.paths_file, columns=columns)
        table = self._parts_table().drop_columns(["order"])
        return table.select(columns) if columns else table

    def _parts_table(self, keep: list[str] | None = None) -> pa.Table:
        tables = [pq.read_table(p).replace_schema_metadata(None) for p in self.part_files()]
        if not tables:
            return PART_SCHEMA.empty_table()
        table = pa.concat_tables(tables)
        if keep is not None:
            table = table.filter(pc.is_in(table.column("query_id"), pa.array(keep, pa.string())))
        return table

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _write_table(table: pa.Table, path: Path) -> None:
    """Under a temporary name unique to this writer (two workers writing the same part never
    share one), fsynced, then renamed over ``path``."""
    with atomic_file(path, "wb") as handle:
        pq.write_table(table, handle)


def describe_mismatch(store: BankStore, manifest: dict, parameters: dict, checksum: str,
                      ids: list[str]) -> str | None:
    """Why an existing bank cannot be resumed with this graph, these queries and these
    parameters (each difference spelled out), or None when it can."""
    problems = []
    old_checksum = manifest.get("graph_checksum")
    if old_checksum != checksum:
        problems.append(f"graph: built on another graph (checksum {str(old_checksum)[:12]}, "
                        f"this graph {checksum[:12]})")
    if manifest.get("query_ids_checksum") != ids_checksum(ids):
        problems.append("queries: " + _query_difference(store.read_query_ids(), ids))
    old_parameters = manifest.get("parameters") or {}
    changed = [f"{key} {_show(old_parameters.get(key, '(unset)'))} -> {_show(parameters.get(key, '(unset)'))}"
               for key in sorted(set(old_parameters) | set(parameters))
               if old_parameters.get(key) != parameters.get(key)]
    if changed:
        problems.append("parameters: " + ", ".join(changed))
    if not problems:
        return None
    return (f"{store.root}: the bank there cannot be resumed: " + "; ".join(problems)
            + "; choose a new --out or pass --force")


def _show(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def _query_difference(old: list[str], new: list[str]) -> str:
    if not old:
        return "the bank's queries.parquet is missing"
    if sorted(old) == sorted(new):
        return f"the same {len(new)} ids in another order"
    added = len(set(new) - set(old))
    dropped = len(set(old) - set(new))
    return (f"the bank has {len(old)} queries, the file {len(new)}: {added} not in the bank, "
            f"{dropped} of the bank's not in the file")
