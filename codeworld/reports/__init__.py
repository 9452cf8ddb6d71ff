"""Report pages, run summaries and plots.

`write_run_page` draws a synthesis run's self-contained HTML page (``codeworld show``),
`write_grid_page` a benchmark grid's; `summarize` and `agent_summary` read a run directory into
data; `line_plot` draws inline SVG curves. See `codeworld.reports._pages` for what a page holds.
"""

from codeworld.reports._pages import (REPORT_FILE, grid_page, line_plot, run_page, tree_svg, write_grid_page,
                                     write_run_page)
from codeworld.reports._summaries import agent_summary, summarize, tree_nodes

# The public names: each one documented on docs/api.md (tests/test_architecture.py checks). The
# other names imported above stay importable here for the package's own modules.
__all__ = [
    "agent_summary",
    "line_plot",
    "summarize",
    "write_grid_page",
    "write_run_page",
]
