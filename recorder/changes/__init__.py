"""A run's changes as undo reads them from the Run Record: each call as an undo step (``steps.py``),
the links between calls (``links.py``), the host's own undo for servers that keep no journal
(``host_undo.py``, ``host_diff.py``), and the Reversal Plan's shape and words (``plan.py``).

Below ``runs/`` and ``undo/``: reminders read the steps' undo windows and run keys index links,
without importing the undo machinery that writes plans and calls tool servers."""
