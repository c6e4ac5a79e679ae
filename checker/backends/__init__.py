"""IR -> code: generated Python for the explicit engine, the Promela twin for SPIN."""
