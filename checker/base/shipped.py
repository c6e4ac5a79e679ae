"""The models shipped with timerace (models/ in the checkout, the package data
checker.models in a wheel), so that an installed `check pi_timer` has an example to run."""

from __future__ import annotations

from pathlib import Path

SUFFIX = ".spec"


def models_dir() -> Path | None:
    """The folder of the shipped models, or None when the install carries none."""
    from importlib import resources  # (only to find a shipped model: start-up)

    try:
        root = resources.files("checker.models")
    except ModuleNotFoundError:
        return None
    path = Path(str(root))
    return path if path.is_dir() else None


def shipped_models() -> dict[str, Path]:
    """Name (the file's stem) -> path, sorted by name."""
    folder = models_dir()
    if folder is None:
        return {}
    return {p.stem: p for p in sorted(folder.glob("*" + SUFFIX))}


def shipped_model(name: str) -> Path | None:
    """The shipped model a bare name (`pi_timer`, or `pi_timer.spec`) stands for."""
    if "/" in name or "\\" in name:
        return None
    return shipped_models().get(name.removesuffix(SUFFIX))


def model_file(arg: str) -> str:
    """What `check ARG` reads: ARG itself (unchanged, as messages print it) when it
    exists, else the shipped model it names, else ARG (reading it reports it missing)."""
    if Path(arg).exists():
        return arg
    shipped = shipped_model(arg)
    return arg if shipped is None else str(shipped)
