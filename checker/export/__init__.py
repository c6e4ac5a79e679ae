"""Exporters: each turns result and trace objects into one output format.
None of them re-runs a model."""
