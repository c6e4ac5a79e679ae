"""timerace: a model checker for the races in hypervisor timer and interrupt paths.

The pipeline, one module per stage: parse -> ast -> resolve -> model -> ir -> compile
-> engines -> trace (results) -> export; cli drives it.
"""

__version__ = "0.1.0"
