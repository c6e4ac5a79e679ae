"""The meaning of the language beyond the resolver: the primitives table, their lowering to
core operations, constant folding, execution contexts lowered to plain state."""
