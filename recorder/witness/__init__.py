"""The witness: a small service that cosigns a Recorder's signed heads, each only if it extends the
last one it cosigned for that run (docs/witness.md)."""
