"""hatp_journal._shared: the floor below the toolkit, for code the other floors share.

Nothing here is for server authors (they import :mod:`hatp_journal.toolkit`), and nothing here imports
any other part of the project: canonical JSON and wire times (which the toolkit re-exports from
:mod:`hatp_journal.toolkit.wire`), reading untrusted files, SMTP delivery, crash points, the extras'
install hints, lazy package namespaces, the PostgreSQL test fixture and the values a Recorder's
conformance adapter hands the suite. Its modules may change without notice (docs/architecture.md).
"""
