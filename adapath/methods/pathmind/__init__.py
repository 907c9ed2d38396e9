"""PathMind (Retrieve-Prioritize-Reason): bounded query subgraphs, a learned A*-like path
priority, single-call reasoning, and SFT + path-level DPO training of the reasoner.

torch and torch-geometric are needed here (``pip install -e ".[train]"``); importing
``adapath`` alone never imports them.
"""
