"""The language: grammar, reference and schemas, shipped as checker.spec."""
