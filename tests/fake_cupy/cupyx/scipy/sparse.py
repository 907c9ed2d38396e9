"""The stand-in's cupyx.scipy.sparse: SciPy's."""

from scipy.sparse import *  # noqa: F401,F403
