"""The front end: spec text -> lark tree -> the typed, frozen syntax tree (checker.front.ast)."""
