"""adapath: multi-hop biomedical question answering over knowledge graphs by path-finding."""

import os

# torch's and Numba's OpenMP threads take turns (a torch op, then a Numba pass, ...): with
# libgomp's default, each side's idle threads spin on the cores the other side is working
# on. Passive waiting lets them sleep: a PathMind training step ran 2.1x to 10x faster
# (10x on a loaded machine). libgomp reads this when it loads, so it is set before anything
# imports torch or Numba; a value the user set is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
