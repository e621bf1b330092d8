"""Seeing a run: the self-contained HTML report (``cogwm view``), case-study exports and the
local server for browsing runs, watching a live run and playing the agent (``cogwm serve``)."""

from __future__ import annotations

from cogwm.web.page import report_html, write_report

__all__ = ["report_html", "write_report"]
