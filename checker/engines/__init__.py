"""Engines: each takes a compiled model and returns statistics and counterexamples
in the shared trace types. None of them sees the parse tree."""
