"""A Path-Bank build's settings: the one home of their defaults (the paper's, Table 17) and
their checks. The settings with help are `adapath bank build`'s options (default and help read
from here). This module imports no array package, so the command line reads it at once; the
engine's functions keep their own keyword defaults, equal to these (a test holds them equal).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from adapath.config import setting
from adapath.errors import InputError

PPR_SOLVES = ("exact", "certified")


@dataclass
class BankConfig:
    level: str = setting("explicit", "Query text: explicit|implicit|bare.")
    beta: float = setting(0.3, "Eq. 1: weight of relation similarity against node similarity.")
    eps: float = 1e-3  # Eq. 1's floor on a relation's weight
    eta: float = setting(0.85, "PPR teleport probability.")
    tol: float = setting(1e-8, "PPR L1 tolerance.")
    ladder: tuple[int, ...] = setting((150, 300, 500, 1000), "Corridor sizes K tried in turn until topic and "
                                                            "answer connect.")
    alpha: float = setting(0.5, "Eq. 5: weight of the edge weight against the corridor score in a path's cost.")
    per_hop: int = setting(5, "Paths (distinct meta-paths) kept per hop count.")
    max_hop: int = setting(5, "Longest path kept, in hops.")
    k_paths: int = 60  # Yen's pool of node paths before binning by hop
    relation_sequences: int = setting(8, "Relation sequences registered per node path where node pairs are "
                                         "joined by several relations (cheapest first).")
    search: str = setting("yen", "yen (k-shortest pool, binned by hop) or hop-bounded (best paths of each hop "
                                 "count).")
    bm25_k1: float = 1.5
    bm25_b: float = 0.0  # length-agnostic, as the AdaPath reference
    batch: int = setting(32, "Queries per batch (one PPR run, one part file).")
    device: str = setting("cpu", "cpu or cuda (CuPy).")
    ppr: str = setting("exact", "exact (power iteration to --tol) or certified (each query stops once its "
                                "corridor's top K is proven final at every --ladder rung).")
    certify_slack: float = setting(0.0, "certified: stop once no node left out can end above (1 + slack) x the "
                                        "last node kept (0 = the exact top K).")
    dense_precision: str = setting("float32", "How PPR's dense terms store their values: float32, or float16 "
                                              "(half the bytes a term reads, CPU only; about 1e-6 of L1 error "
                                              "instead of --tol).")

    def signature(self) -> dict:
        """The parameters that change results (batch size and device do not; an exact
        solve's signature is the one banks had before the certified solve existed)."""
        d = asdict(self)
        d.pop("batch")
        d.pop("device")
        if self.ppr == "exact":
            d.pop("ppr")
            d.pop("certify_slack")
        if self.dense_precision == "float32":  # the precision banks had before float16 existed
            d.pop("dense_precision")
        d["ladder"] = list(self.ladder)
        return d

    def check(self) -> None:
        """One line for the first parameter out of range."""
        from adapath.engine.batch_paths import SEARCHES
        from adapath.engine.ppr import DENSE_PRECISIONS

        if not 0.0 <= self.beta <= 1.0:
            raise InputError(f"beta {self.beta}: must lie in [0, 1]")
        if not 0.0 < self.eta < 1.0:
            raise InputError(f"eta {self.eta}: the teleport probability must lie in (0, 1)")
        if not 0.0 <= self.alpha <= 1.0:
            raise InputError(f"alpha {self.alpha}: must lie in [0, 1]")
        if not self.ladder or any(k < 1 for k in self.ladder) or list(self.ladder) != sorted(set(self.ladder)):
            raise InputError(f"ladder {','.join(map(str, self.ladder))}: give increasing corridor sizes, "
                             "each at least 1 (e.g. 150,300,500,1000)")
        for name in ("per_hop", "max_hop", "k_paths", "relation_sequences", "batch"):
            if getattr(self, name) < 1:
                raise InputError(f"{name.replace('_', '-')} must be at least 1")
        if not 0.0 < self.tol < 1.0:
            raise InputError(f"tol {self.tol}: must lie in (0, 1)")
        if self.ppr not in PPR_SOLVES:
            raise InputError(f"ppr {self.ppr!r}: choose {' or '.join(PPR_SOLVES)}")
        if not self.certify_slack >= 0.0:
            raise InputError(f"certify slack {self.certify_slack}: must be at least 0")
        if self.dense_precision not in DENSE_PRECISIONS:
            raise InputError(f"dense precision {self.dense_precision!r}: choose {' or '.join(DENSE_PRECISIONS)}")
        if self.dense_precision == "float16" and self.device != "cpu":
            raise InputError("dense precision float16 runs on the CPU only (--device cpu)")
        if self.search not in SEARCHES:
            raise InputError(f"search {self.search!r}: choose {' or '.join(SEARCHES)}")
