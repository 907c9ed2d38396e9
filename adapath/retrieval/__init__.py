"""Text retrieval: BM25 (bm25s), sentence encoders, the node-embedding store and FAISS."""

DEFAULT_ENCODER = "minilm"  # the sentence encoder of every command and config unless told otherwise
