"""The Z3 engines: the solver factory, terms, the encoding of a compiled model, bmc,
k-induction and lemmas."""
