"""AdaPath's meta-path guided inference in its parts (``adapath.methods.adapath`` puts them
together): its settings (``config``), the plan of each question (``plan``: Path-Bank retrieval
and control signals), the two explorers, of which a run uses one (``beam``, ``walk``), and the
answer step (``answer``)."""
