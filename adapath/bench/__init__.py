"""``adapath bench``: every benchmark a subcommand (a module of ``BENCHES`` with ``arguments()``
and ``main(argv)``) over shared parts: ``inputs``, ``timing``, ``environment``, ``result``,
``runner``, ``suite``."""

# name: (module, what it measures, in a line)
BENCHES = {
    "bank": ("adapath.bench.bank", "Path-Bank build throughput, ours (exact, certified PPR) against a per-query "
                                   "igraph reference; thread scaling; Ray workers; the GPU build"),
    "answer": ("adapath.bench.answer", "AdaPath inference: queries/s with --llm none, ms per stage, Path-Bank "
                                       "matching, LLM calls and prompt tokens per query"),
    "methods": ("adapath.bench.methods", "every registered method on one generated graph: EM, recall, LLM calls, "
                                         "tokens and seconds per query"),
    "pathmind": ("adapath.bench.pathmind", "PathMind: training s/epoch, inference and Hits@1/3; --real: on the real "
                                           "BioStrat-QA dev halves (models, ablations, reasoner rows)"),
    "pathmind-speed": ("adapath.bench.pathmind_speed", "PathMind's training, validation and answering questions/s and "
                                                       "page faults per question, setting against setting"),
    "pathmind-default": ("adapath.bench.pathmind_default", "PathMind's priority networks on a small generated "
                                                           "graph: what the default learns against its variants"),
    "real-records": ("adapath.bench.real_records", "AdaPath on real BioStrat-QA records planted in a graph: EM by "
                                                   "level x hop, recall, meta-path R@k, failures"),
    "encoder": ("adapath.bench.encoder", "CPU routes of the MiniLM node encoder: texts/s and ranking agreement with "
                                         "torch float32"),
    "kg": ("adapath.bench.kg", "graph generation, PrimeKG kg.csv writing and import, loading: seconds and peak "
                               "memory"),
    "view": ("adapath.bench.view", "the result viewer's page size and load time in headless Chromium"),
    "ctrl-c": ("adapath.bench.ctrl_c", "Ctrl-C at random instants into bank build, answer and PathMind: clean "
                                       "exits (130, one line), reruns resumed to the uninterrupted output"),
    "paths-recall": ("adapath.bench.paths_recall", "Yen's paths against the exact hop-bounded search: gold paths "
                                                   "recovered, ms per query"),
    "metapath-coverage": ("adapath.bench.metapath_coverage", "gold meta-paths in each record's own bank entry, by "
                                                             "relation sequences per node path"),
    "gpu": ("adapath.bench.gpu", "every GPU path in one table: CuPy PPR, the GPU bank build, FAISS, CUDA node "
                                 "embedding, vLLM (each skipped with its reason where missing)"),
    "reasoner": ("adapath.bench.reasoner", "a few LoRA SFT steps of PathMind's reasoner (SmolLM2-135M), on the GPU "
                                           "or the CPU"),
}
