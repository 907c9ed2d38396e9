"""adapath: multi-hop biomedical question answering over knowledge graphs by path-finding."""

__version__ = "0.1.0"
