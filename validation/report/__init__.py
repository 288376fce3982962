"""Reports render results; they never re-judge (verdicts come from the checks and the judge)."""

from validation.report.html import render_html
from validation.report.load import load_run
from validation.report.terminal import render_terminal

__all__ = ["load_run", "render_html", "render_terminal"]
