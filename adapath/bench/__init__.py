"""``adapath bench``: every benchmark a subcommand (a module of ``BENCHES`` with ``arguments()``
and ``main(argv)``) over shared parts: ``inputs``, ``timing``, ``environment``, ``result``,
``runner``, ``suite``."""

# name: what it measures, in a line (the module: adapath.bench.NAME, dashes as underscores)
LINES = {
    "bank": "Path-Bank build throughput, ours (exact, certified PPR) against a per-query igraph "
            "reference; thread scaling; Ray workers; the GPU build",
    "answer": "AdaPath inference: queries/s with --llm none, ms per stage, Path-Bank matching, LLM "
              "calls and prompt tokens per query",
    "methods": "every registered method on one generated graph: EM, recall, LLM calls, tokens and "
               "seconds per query",
    "pathmind": "PathMind: training s/epoch, inference and Hits@1/3; --real: on the real "
                "BioStrat-QA dev halves (models, ablations, reasoner rows)",
    "pathmind-speed": "PathMind's training, validation and answering questions/s and page faults "
                      "per question, setting against setting",
    "pathmind-default": "PathMind's priority networks on a small generated graph: what the default "
                        "learns against its variants",
    "real-records": "AdaPath on real BioStrat-QA records planted in a graph: EM by level x hop, "
                    "recall, meta-path R@k, failures",
    "encoder": "CPU routes of the MiniLM node encoder: texts/s and ranking agreement with torch "
               "float32",
    "kg": "graph generation, PrimeKG kg.csv writing and import, loading: seconds and peak memory",
    "view": "the result viewer's page size and load time in headless Chromium",
    "ctrl-c": "Ctrl-C at random instants into bank build, answer and PathMind: clean exits (130, "
              "one line), reruns resumed to the uninterrupted output",
    "paths-recall": "Yen's paths against the exact hop-bounded search: gold paths recovered, ms "
                    "per query",
    "metapath-coverage": "gold meta-paths in each record's own bank entry, by relation sequences "
                         "per node path",
    "gpu": "every GPU path in one table: CuPy PPR, the GPU bank build, FAISS, CUDA node embedding, "
           "vLLM (each skipped with its reason where missing)",
    "reasoner": "a few LoRA SFT steps of PathMind's reasoner (SmolLM2-135M), on the GPU or the CPU",
}
BENCHES = {name: ("adapath.bench." + name.replace("-", "_"), line) for name, line in LINES.items()}
