"""The Path-Bank: its input, its construction, its storage and its retrieval.

- ``query``: ``TrainingQuery``, what a bank is built from (datasets turn their records into it);
- ``build``: plan the batches, ``run_batch`` turns a batch of pairs into rows, ``commit``
  records them; ``build_bank`` drives a whole build through an executor;
- ``worker``: the build as a workload of ``adapath.executors`` (its worker, tasks and spec),
  so its batches run wherever an executor runs them (this process, a Ray cluster);
- ``store``: the Parquet schema, the manifest, parts named by batch, merge and read;
- ``info``: what a bank holds (``adapath bank info``);
- ``index``: Path-Bank retrieval at inference (AdaPath Eq. 6).

Nothing here imports Ray.
"""
