"""Helpers shared by test folders: servers and worlds several folders build, and ``wait_until``.

Importable as ``support`` from any test (tests/conftest.py puts tests/ on the import path, as
pytest does for every folder holding a conftest.py).
"""
