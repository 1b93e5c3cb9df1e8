"""``ntile.calibrate``: hardware profile keys fitted to measured GEMM times (``ntile
calibrate`` in-process)."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Dict, Mapping, NamedTuple, Optional, Sequence, Union

PathLike = Union[str, "os.PathLike[str]"]


class Calibration(NamedTuple):
    """What :func:`calibrate` returns."""

    profile: Dict[str, Any]
    """The fitted profile, in the JSON form ``hw=`` takes."""
    report: str
    """What ``ntile calibrate`` printed: each row's modeled and measured time before and
    after the fit, and the mean absolute percentage error."""


_CALIBRATE_COLUMNS = (
    "m", "k", "n", "dtype", "schedule", "block_m", "block_n", "block_k", "lhs_transposed", "target", "measured_us",
)


def _csv_cell(column: str, v: Any) -> str:
    """A cell as the CSV reader of ``ntile calibrate`` reads it back: quoted when it holds a
    comma, a quote or a ``#``; a line break (which would start another row) is refused."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    text = str(v)
    if "\n" in text or "\r" in text:
        raise ValueError(f"measured: column {column!r}: the cell {text!r} holds a line break")
    if any(c in text for c in ',"#') or text.strip() != text:
        return '"' + text.replace('"', '""') + '"'
    return text


def calibrate(
    measured: Union[PathLike, Sequence[Mapping[str, Any]]],
    *,
    target: str = "trn2",
    fit: Optional[Sequence[str]] = None,
    hw: Optional[Union[PathLike, Mapping[str, Any]]] = None,
) -> Calibration:
    """Fit hardware profile keys to measured GEMM times, as ``ntile calibrate`` does.

    ``measured`` is the CSV file's path, or its rows as mappings with the columns ``m, k, n,
    dtype, schedule, block_m, block_n, block_k, lhs_transposed, target, measured_us`` (a
    missing or None cell is empty). ``fit`` names the keys to fit (default: the CLI's);
    ``hw`` is the starting profile.
    """
    if isinstance(fit, (str, bytes)):
        raise TypeError(f"fit: expected a sequence of profile keys such as [{fit!r}], got a {type(fit).__name__}")
    if fit is not None:
        fit = list(fit)
        for key in fit:
            if not isinstance(key, str):
                raise TypeError(f"fit: every key must be a string, got {type(key).__name__} {key!r}")
    is_path = isinstance(measured, (str, os.PathLike))
    if not is_path:
        if isinstance(measured, (Mapping, bytes)) or not hasattr(measured, "__iter__"):
            raise TypeError(
                f"measured: expected a CSV path or a sequence of row mappings, got {type(measured).__name__}"
            )
        measured = list(measured)
        for i, row in enumerate(measured):
            if not isinstance(row, Mapping):
                raise TypeError(f"measured[{i}]: expected a mapping of columns to cells, got {type(row).__name__}")
    from . import _HwFile, cli

    with tempfile.TemporaryDirectory(prefix="ntile-") as tmp, _HwFile(hw) as hw_path:
        if is_path:
            csv = os.fspath(measured)
        else:
            csv = os.path.join(tmp, "measured.csv")
            lines = [",".join(_CALIBRATE_COLUMNS)]
            for row in measured:
                unknown = set(row) - set(_CALIBRATE_COLUMNS)
                if unknown:
                    raise ValueError(f"measured: unknown columns {sorted(unknown)}")
                lines.append(",".join(_csv_cell(c, row.get(c)) for c in _CALIBRATE_COLUMNS))
            with open(csv, "w", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
        out = os.path.join(tmp, "profile.json")
        argv = ["calibrate", csv, "-o", out, "--target", str(target)]
        if fit is not None:
            argv += ["--fit", ",".join(fit)]
        if hw_path is not None:
            argv += ["--hw", hw_path]
        report = cli(*argv)
        with open(out, encoding="utf-8") as f:
            return Calibration(json.load(f), report)
