"""What a tool server's answer carries, taken in: its journal object bounded and verified
(``journal_objects.py``), the compensation token kept aside (``tokens.py``), the server's pinned keys
(``pins.py``), and the errors of reaching it (``downstream_errors.py``).

Below ``undo/`` and ``gateway/``: the data plane takes a call's answer in, and an undo takes in
its compensating call's answer, the same way."""
