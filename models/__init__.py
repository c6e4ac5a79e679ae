"""The shipped models, installed as the package data checker.models (`check --list-models`)."""
