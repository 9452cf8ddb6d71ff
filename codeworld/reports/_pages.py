"""The report pages: one self-contained HTML file per synthesis run, and one per benchmark grid.

A run's page (``report.html``, written by ``codeworld show``) holds the best score against LLM
calls (training, and held-out when the run scored a held-out split; the floor and the ceiling as
lines), the search tree (one circle per program, coloured by its floor-normalised score from red
at the floor to green at the ceiling, buggy ones grey with a red cross, edges labelled G
generate, I improve, F fix), and, a click on a circle or a point away, that call's program,
prompt and answer, its repairs and its fit; records that cannot be read are named. Below them: the
best program with its per-component accuracy, mispredicted transitions beside the truth, the
mechanical repairs, constant fits, composition and speed step of the run, and the planning returns
when the run planned.

The grid page (``report.html`` in a CWMB results folder, written by ``benchmarks/cwmb.py``) holds
the table, one curve per environment and links to each run's page.

Nothing is fetched when a page is viewed: the pictures are inline SVG and the script is inline.
Run directories are read through `codeworld.synthesis.RunDir` only, so every run directory that
``codeworld show`` reads (also those written by earlier versions) gets a page.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any

from codeworld.reports._summaries import best_label, summarize, tree_nodes

ACTION_LETTER = {"generate": "G", "improve": "I", "fix": "F"}
REPORT_FILE = "report.html"

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.35em;margin-bottom:.2em} h2{font-size:1.1em;margin-top:1.6em;border-bottom:1px solid #ddd}
h3{font-size:1em}
.muted{color:#666;font-size:.9em} table{border-collapse:collapse;margin:.4em 0}
td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right;font-size:.9em}
th{background:#f3f3f3} td.l,th.l{text-align:left}
pre{background:#f7f7f7;border:1px solid #ddd;padding:.6em;overflow:auto;max-height:24em;font-size:.8em}
.row{display:flex;gap:1.5em;flex-wrap:wrap;align-items:flex-start}
.panel{border:1px solid #ccc;border-radius:4px;padding:.5em 1em;min-width:360px;flex:1}
svg .node{cursor:pointer} svg .node:hover circle{stroke-width:3} .wrong{background:#fde2e2}
svg .pt{cursor:pointer} .chip{display:inline-block;padding:0 .4em;border-radius:3px;background:#eee}
details>summary{cursor:pointer}
"""

# Shows one call's record (program, prompt, answer, repairs, fit) in the details panel; the
# records are the JSON in <script id="calls">.
_SCRIPT = """
(function(){
  const calls = JSON.parse(document.getElementById('calls').textContent);
  const el = id => document.getElementById(id);
  function text(id, value){ el(id).textContent = value === null || value === undefined ? '' : value; }
  function show(call){
    const c = calls[String(call)];
    if(!c){ return; }
    document.querySelectorAll('svg .node').forEach(n => n.classList.toggle('selected', n.dataset.call === String(call)));
    text('detail-title', 'call ' + call + ': ' + c.action + (c.parent ? ' of call ' + c.parent : ' from the root')
         + ', ' + (c.buggy ? 'buggy' : 'score ' + c.score.toFixed(4))
         + (c.heldout === null || c.heldout === undefined ? '' : ', held-out ' + c.heldout.toFixed(4)));
    text('detail-program', c.program === null ? '(no program in the answer)' : c.program);
    text('detail-feedback', c.feedback || '');
    text('detail-prompt', (c.prompt || []).map(m => '[' + m.role + ']\\n' + m.content).join('\\n\\n'));
    text('detail-answer', c.answer === null ? '(no call record)' : c.answer);
    text('detail-extra', c.extra || '');
    el('detail-extra').hidden = !c.extra;
    el('details').hidden = false;
  }
  document.querySelectorAll('[data-call]').forEach(n => n.addEventListener('click', () => show(n.dataset.call)));
  window.codeworldShowCall = show;
})();
"""


# ------------------------------------------------------------------------------------ helpers


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _f(value: Any, digits: int = 4) -> str:
    return "n/a" if value is None else f"{float(value):.{digits}f}"


def _colour(score: float, floor: float | None = None, ceiling: float | None = None) -> str:
    """Red at the floor (or 0) to green at the ceiling (or 1): a program no better than the
    do-nothing model is red however high its raw score."""
    low, high = (floor or 0.0), (1.0 if ceiling is None else ceiling)
    share = (score - low) / (high - low) if high > low else float(score >= high)
    hue = int(round(120 * max(0.0, min(1.0, share))))
    return f"hsl({hue}, 70%, 45%)"


def _json_for_script(data: Any) -> str:
    # "</" would end the <script> element early; JSON allows "<\/" for it.
    return json.dumps(data, default=str).replace("</", "<\\/")


def _page(title: str, body: str, script: str = "", data: Any = None) -> str:
    data_tag = ("" if data is None else
                f"<script type='application/json' id='calls'>{_json_for_script(data)}</script>\n")
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<link rel='icon' href='data:,'><title>{_e(title)}</title>"
            f"<style>{_STYLE}</style></head>\n<body>\n{body}\n{data_tag}"
            + (f"<script>{script}</script>\n" if script else "") + "</body></html>\n")


def line_plot(series: dict[str, list[float | None]], *, title: str, xlabel: str = "LLM calls",
              ylabel: str = "best score so far", hlines: dict[str, float] | None = None,
              point_class: dict[str, str] | None = None, width: int = 560,
              height: int = 300) -> str:
    """An inline SVG line chart of scores (y from 0 to 1) against calls 1..n.

    Every value is drawn as a circle (``class="pt <point_class[name]>"``, ``data-call`` its call
    number), joined by a line; a None value leaves a gap. ``hlines`` draws dashed reference lines
    (the floor and the ceiling).
    """
    palette = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")
    left, right, top, bottom = 50, 150, 28, 40
    pw, ph = width - left - right, height - top - bottom
    n = max(2, max((len(v) for v in series.values()), default=1))

    def x(i: int) -> float:
        return left + (i - 1) / (n - 1) * pw

    def y(v: float) -> float:
        return top + (1.0 - max(0.0, min(1.0, float(v)))) * ph

    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
           f"font-size='11' role='img' aria-label='{_e(title)}'>",
           f"<text x='{left}' y='16' font-size='13'>{_e(title)}</text>"]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        out.append(f"<line x1='{left}' x2='{left + pw}' y1='{y(tick):.1f}' y2='{y(tick):.1f}' "
                   f"stroke='#eee'/><text x='{left - 6}' y='{y(tick) + 4:.1f}' "
                   f"text-anchor='end'>{tick:g}</text>")
    step = max(1, round(n / 10))
    for i in range(1, n + 1, step):
        out.append(f"<text x='{x(i):.1f}' y='{top + ph + 15}' text-anchor='middle'>{i}</text>")
    out.append(f"<rect x='{left}' y='{top}' width='{pw}' height='{ph}' fill='none' stroke='#444'/>")
    out.append(f"<text x='{left + pw / 2}' y='{height - 6}' text-anchor='middle'>{_e(xlabel)}</text>")
    out.append(f"<text x='12' y='{top + ph / 2}' text-anchor='middle' "
               f"transform='rotate(-90 12 {top + ph / 2})'>{_e(ylabel)}</text>")
    legend = 0
    for name, value in (hlines or {}).items():
        if value is None:
            continue
        out.append(f"<line class='ref' x1='{left}' x2='{left + pw}' y1='{y(value):.1f}' "
                   f"y2='{y(value):.1f}' stroke='#555' stroke-dasharray='5,4'/>"
                   f"<text x='{left + pw - 4}' y='{y(value) - 4:.1f}' fill='#555' "
                   f"text-anchor='end'>"
                   f"{_e(name)} {float(value):.3f}</text>")
    for k, (name, values) in enumerate(series.items()):
        colour = palette[k % len(palette)]
        cls = (point_class or {}).get(name, "")
        dash = " stroke-dasharray='6,3'" if k else ""
        fill = "white" if k else colour
        runs: list[list[str]] = [[]]
        for i, v in enumerate(values):
            if v is None:
                runs.append([])
            else:
                runs[-1].append(f"{x(i + 1):.1f},{y(v):.1f}")
        for run in runs:
            if len(run) > 1:
                out.append(f"<polyline points='{' '.join(run)}' fill='none' stroke='{colour}' "
                           f"stroke-width='2'{dash}/>")
        for i, v in enumerate(values):
            if v is not None:
                out.append(f"<circle class='pt {cls}' data-call='{i + 1}' cx='{x(i + 1):.1f}' "
                           f"cy='{y(v):.1f}' r='3.5' fill='{fill}' stroke='{colour}'><title>{_e(name)}, call "
                           f"{i + 1}: {float(v):.4f}</title></circle>")
        ly = top + 12 + 16 * legend
        legend += 1
        out.append(f"<line x1='{left + pw + 10}' x2='{left + pw + 26}' y1='{ly - 4}' "
                   f"y2='{ly - 4}' stroke='{colour}' stroke-width='2'{dash}/>"
                   f"<text x='{left + pw + 30}' y='{ly}'>{_e(name)}</text>")
    out.append("</svg>")
    return "\n".join(out)


def tree_svg(nodes: list[dict], floor: float | None = None, ceiling: float | None = None) -> str:
    """The search tree as inline SVG: one ``<g class="node" data-call=N>`` per program.

    ``nodes`` are `tree_nodes` records; a node whose parent is not among
    them hangs from the root. Circles are coloured by the floor-normalised score (red at the
    ``floor``, green at the ``ceiling``; 0 and 1 when not given).
    """
    children: dict[int, list[int]] = {}
    by_call = {n["call"]: n for n in nodes}
    for node in nodes:
        parent = node["parent_call"] if node["parent_call"] in by_call else -1
        children.setdefault(parent, []).append(node["call"])
    x_of: dict[int, float] = {}
    depth_of: dict[int, int] = {-1: 0}
    next_leaf = [0]

    def place(call: int, depth: int) -> float:
        depth_of[call] = depth
        kids = children.get(call, [])
        if not kids:
            x_of[call] = next_leaf[0]
            next_leaf[0] += 1
        else:
            xs = [place(k, depth + 1) for k in kids]
            x_of[call] = (xs[0] + xs[-1]) / 2
        return x_of[call]

    place(-1, 0)
    dx, dy, pad, r = 46, 72, 30, 15
    width = max(300, int(next_leaf[0] * dx + 2 * pad))
    height = int((max(depth_of.values()) + 1) * dy + 2 * pad)

    def pos(call: int) -> tuple[float, float]:
        return pad + x_of[call] * dx + dx / 2, pad + depth_of[call] * dy

    parts = [f"<svg id='tree' xmlns='http://www.w3.org/2000/svg' width='{width}' "
             f"height='{height}' font-size='10'>"]
    for node in nodes:
        parent = node["parent_call"] if node["parent_call"] in by_call else -1
        (x1, y1), (x2, y2) = pos(parent), pos(node["call"])
        letter = ACTION_LETTER.get(node["action"], node["action"][:1].upper())
        parts.append(f"<line x1='{x1:.1f}' y1='{y1:.1f}' x2='{x2:.1f}' y2='{y2:.1f}' "
                     f"stroke='#888' stroke-width='1.5'/><text class='edge' "
                     f"x='{(x1 + x2) / 2 + 4:.1f}' y='{(y1 + y2) / 2:.1f}' font-size='11' "
                     f"fill='#333'>{letter}</text>")
    rx, ry = pos(-1)
    parts.append(f"<circle cx='{rx:.1f}' cy='{ry:.1f}' r='{r}' fill='#fff' stroke='#333'/>"
                 f"<text x='{rx:.1f}' y='{ry + 4:.1f}' text-anchor='middle'>root</text>")
    for node in nodes:
        x, y = pos(node["call"])
        info = (f"call {node['call'] + 1}: {node['action']}, "
                + ("buggy" if node["buggy"] else f"score {node['score']:.4f}")
                + (f", value {node['value']:.4f}, visits {node['visits']}"
                   if node.get("value") is not None else ""))
        fill = "#bbb" if node["buggy"] else _colour(float(node["score"]), floor, ceiling)
        parts.append(f"<g class='node{' buggy' if node['buggy'] else ''}' "
                     f"data-call='{node['call'] + 1}'><title>{_e(info)}</title>"
                     f"<circle cx='{x:.1f}' cy='{y:.1f}' r='{r}' fill='{fill}' stroke='#222'/>")
        if node["buggy"]:
            d = r * 0.6
            parts.append(f"<path d='M{x - d:.1f},{y - d:.1f} L{x + d:.1f},{y + d:.1f} "
                         f"M{x - d:.1f},{y + d:.1f} L{x + d:.1f},{y - d:.1f}' "
                         f"stroke='#c00' stroke-width='2.5'/>")
        parts.append(f"<text x='{x:.1f}' y='{y + 4:.1f}' text-anchor='middle'>"
                     f"{node['call'] + 1}</text></g>")
    parts.append("</svg>")
    return "\n".join(parts)


# ------------------------------------------------------------------------------------ a run


def _heldout_of(record: dict | None) -> dict | None:
    """The held-out figures of a program record or best report (top level, or in its report)."""
    if not record:
        return None
    held = record.get("heldout") or (record.get("report") or {}).get("heldout")
    return held if isinstance(held, dict) and held.get("score") is not None else None


def _read_optional(run_dir: Any, name: str, problems: list[str] | None = None) -> dict | None:
    """One of the run's JSON records, or None when it is absent; one that cannot be read is
    named in ``problems`` (the page lists them) rather than dropped unseen."""
    if not (run_dir.path / name).is_file():
        return None
    try:
        return run_dir.read_json(name)
    except (OSError, ValueError) as exc:
        if problems is not None:
            problems.append(str(exc))
        return None


def _call_records(run_dir: Any, nodes: list[dict], problems: list[str]) -> dict[str, dict]:
    """What the details panel shows for each call, keyed by the 1-based call number (a record
    that cannot be read is named in ``problems``, the call shown without it)."""
    calls = run_dir.load_calls(problems)
    reports = run_dir.program_reports(problems)
    repairs = run_dir.load_repairs(problems)
    fits = run_dir.load_fits(problems)
    out = {}
    for node in nodes:
        call = node["call"]
        record = calls.get(call) or {}
        report = reports.get(call) or {}
        path = run_dir.program_path(call)
        program = path.read_text(encoding="utf-8") if path.is_file() else None
        completion = record.get("completion")
        answer = completion.get("text") if isinstance(completion, dict) else completion
        extra = []
        if call in repairs:
            extra.append("mechanical repairs: " + "; ".join(
                _repair_text(r) for r in repairs[call].get("repairs", [])))
        if call in fits:
            fit = fits[call].get("fit") or {}
            extra.append("constants fitted in the search: score "
                         f"{_f(fit.get('score_before'))} -> {_f(fit.get('score_after'))}, held-out "
                         f"{_f(fit.get('heldout_before'))} -> {_f(fit.get('heldout_after'))}")
        held = _heldout_of(report)
        out[str(call + 1)] = {
            "action": node["action"],
            "parent": node["parent_call"] + 1 if node["parent_call"] >= 0 else None,
            "score": 0.0 if node["buggy"] else float(node["score"]), "buggy": bool(node["buggy"]),
            "heldout": None if held is None else float(held["score"]),
            "program": program, "feedback": report.get("feedback"),
            "prompt": [{"role": m.get("role", "?"), "content": m.get("content", "")}
                       for m in record.get("messages", [])],
            "answer": answer, "extra": "\n".join(extra)}
    return out


def _repair_text(repair: Any) -> str:
    if not isinstance(repair, dict):
        return str(repair)
    text = str(repair.get("kind", "repair"))
    if repair.get("line"):
        text += f" (line {repair['line']})"
    return text + (f": {repair['detail']}" if repair.get("detail") else "")


def _curves(nodes: list[dict], calls: dict[str, dict]) -> tuple[list[float], list[float | None]]:
    """Best training score after each call, and the held-out score of that best program."""
    best, best_held, train, held = float("-inf"), None, [], []
    for node in nodes:
        record = calls[str(node["call"] + 1)]
        if record["score"] > best:
            best, best_held = record["score"], record["heldout"]
        train.append(best)
        held.append(best_held)
    return train, held


def _transition_table(mis: dict, names: list[str] | None = None) -> str:
    """One mispredicted transition: state and action, then truth and prediction side by side."""
    expected, predicted = mis.get("expected") or {}, mis.get("predicted") or {}
    true_state = expected.get("next_state") or []
    pred_state = predicted.get("next_state") or []
    wrong_dims = set(mis.get("wrong_dims") or [])
    wrong = set(mis.get("wrong") or [])
    state = mis.get("state") or []
    rows = ["<tr><th class='l'>component</th><th>state</th><th>true next</th>"
            "<th>predicted next</th></tr>"]
    for i in range(max(len(true_state), len(pred_state))):
        name = names[i] if names and i < len(names) else f"state[{i}]"
        cls = " class='wrong'" if i in wrong_dims else ""
        cell = (lambda seq: _f(seq[i], 6) if i < len(seq) and seq[i] is not None else "")
        rows.append(f"<tr{cls}><td class='l'>{_e(name)}</td><td>{cell(state)}</td>"
                    f"<td>{cell(true_state)}</td><td>{cell(pred_state)}</td></tr>")
    for key in ("reward", "done"):
        cls = " class='wrong'" if key in wrong else ""
        rows.append(f"<tr{cls}><td class='l'>{key}</td><td></td><td>{_e(expected.get(key))}</td>"
                    f"<td>{_e(predicted.get(key))}</td></tr>")
    where = f"transition {mis.get('index')}" + (
        f" (step {mis['episode_step']} of its episode)" if mis.get("episode_step") is not None else "")
    return (f"<p class='muted'>{_e(where)}, action {_e(mis.get('action'))}; rows in red are "
            f"wrong</p><table class='transition'>{''.join(rows)}</table>")


def _components_table(best: dict) -> str:
    report = best.get("report") or {}
    held = _heldout_of(best) or {}
    columns = [("whole / training", report.get("components") or {})]
    if held.get("components"):
        columns.append(("held-out", held["components"]))
    floor = (report.get("floor") or {}).get("components") if isinstance(report.get("floor"), dict) else None
    if floor:
        columns.append(("floor", floor))
    keys = [k for k in ("state", "state_dims", "reward", "done") if any(k in c for _, c in columns)]
    head = "".join(f"<th>{_e(name)} accuracy</th>" for name, _ in columns)
    err = "<th>held-out error</th>" if held.get("components") else ""
    rows = []
    for key in keys:
        cells = "".join(f"<td>{_f(c.get(key))}</td>" for _, c in columns)
        if held.get("components"):
            value = held["components"].get(key)
            cells += f"<td>{_f(None if value is None else 1.0 - float(value))}</td>"
        rows.append(f"<tr><td class='l'>{_e(key)}</td>{cells}</tr>")
    return f"<table><tr><th class='l'>component</th>{head}{err}</tr>{''.join(rows)}</table>"


def _planning_html(planning: dict | None) -> str:
    if not planning:
        return "<p class='muted'>This run did not plan (no planning record in the run directory).</p>"
    returns = {k: planning.get(f"return_{k}") for k in ("random", "oracle", "model")}
    known = [v for v in returns.values() if v is not None]
    lo, hi = (min(known + [0.0]), max(known + [0.0])) if known else (0.0, 1.0)
    span = (hi - lo) or 1.0
    width, bar_h, left = 460, 22, 70
    bars = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{len(returns) * 30 + 10}'"
            f" font-size='11' id='planning'>"]
    zero = left + (0.0 - lo) / span * (width - left - 80)
    for k, (name, value) in enumerate(returns.items()):
        yy = 8 + k * 30
        bars.append(f"<text x='0' y='{yy + 15}'>{name}</text>")
        if value is not None:
            end = left + (float(value) - lo) / span * (width - left - 80)
            x0, w = min(zero, end), abs(end - zero)
            bars.append(f"<rect class='bar' x='{x0:.1f}' y='{yy}' width='{max(w, 1):.1f}' "
                        f"height='{bar_h}' fill='{'#2ca02c' if name == 'model' else '#999'}'/>"
                        f"<text x='{max(zero, end) + 4:.1f}' y='{yy + 15}'>{float(value):.1f}</text>")
        else:
            bars.append(f"<text x='{left}' y='{yy + 15}' fill='#999'>not available</text>")
    bars.append("</svg>")
    norm = planning.get("normalized_return")
    note = planning.get("note") or planning.get("normalized_note")
    text = (f"normalized return {_f(norm)}" if norm is not None else
            f"normalized return undefined{': ' + str(note) if note else ''}")
    episodes = planning.get("episodes")
    return ("\n".join(bars) + f"<p>{_e(text)}"
            + (f" ({_e(episodes)} episodes)" if episodes else "") + "</p>")


def _finish_html(run_dir: Any, calls: dict[str, dict], problems: list[str]) -> str:
    rows = []
    for number, record in calls.items():
        if record["extra"]:
            rows.append(f"<tr><td><a href='#' data-call='{number}'>{number}</a></td>"
                        f"<td class='l'>{_e(record['extra'])}</td></tr>")
    parts = []
    if rows:
        parts.append("<h3>During the search (not LLM calls)</h3><table id='repairs'><tr><th>call</th>"
                     f"<th class='l'>what was done</th></tr>{''.join(rows)}</table>")
    else:
        parts.append("<p class='muted'>No mechanical repair or constant fit during the search.</p>")
    compose = _read_optional(run_dir, "compose.json", problems)
    fit = _read_optional(run_dir, "fit.json", problems)
    speed = _read_optional(run_dir, "speed.json", problems)
    items = []
    if compose:
        used = ", ".join(str(c + 1) for c in compose.get("calls") or [])
        items.append(f"composition{f' of calls {used}' if used else ''}: "
                     f"{_e(compose.get('status'))}, score {_f(compose.get('score'))} "
                     f"(best before {_f(compose.get('best_before'))}), "
                     f"{'became the best' if compose.get('became_best') else 'not kept'}")
    if fit:
        items.append(f"constant fit of the best program: score {_f(fit.get('score_before'))} -> "
                     f"{_f(fit.get('score_after'))}, held-out {_f(fit.get('heldout_before'))} -> "
                     f"{_f(fit.get('heldout_after'))}, "
                     f"{'accepted' if fit.get('accepted') else 'not accepted'}")
    if speed:
        rate = speed.get("steps_per_second") or speed.get("steps_per_s")
        items.append(f"speed step: {'compiled' if speed.get('compiled') else 'Python path'}"
                     + (f" ({_e(speed.get('how'))})" if speed.get("how") else "")
                     + (f", {float(rate):,.0f} model steps/s" if rate else ""))
    if items:
        parts.append("<h3>After the search</h3><ul>" + "".join(f"<li>{i}</li>" for i in items)
                     + "</ul>")
    return "\n".join(parts)


def run_page(run_path: str | os.PathLike, planning: dict | None = None) -> str:
    """The HTML of a run's report page (see the module docstring).

    Args:
        run_path: a run directory (``codeworld synthesize``, ``codeworld demo``, a benchmark job).
        planning: planning returns (``return_random``, ``return_oracle``, ``return_model``,
            ``normalized_return``) when they are kept outside the run directory; by default the
            ``planning`` of the run's ``demo.json``, if any.
    """
    from codeworld.synthesis import RunDir

    run_path = Path(run_path)
    run_dir = RunDir(run_path)
    summary = summarize(run_path)
    problems: list[str] = []
    tree = _read_optional(run_dir, "tree.json", problems) or {}
    nodes = tree_nodes(tree)
    calls = _call_records(run_dir, nodes, problems)
    train, held = _curves(nodes, calls)
    best_record = _read_optional(run_dir, "best_report.json", problems)
    best_report = (best_record or {}).get("report") or {}
    best_held = _heldout_of(best_record)
    if planning is None:
        planning = (_read_optional(run_dir, "demo.json", problems) or {}).get("planning")
    finish = _finish_html(run_dir, calls, problems)  # before the head, which names bad records

    def ref(name: str) -> float | None:
        value = best_report.get(name)
        if isinstance(value, dict):
            value = value.get("score")
        return None if value is None else float(value)

    title = f"{summary['method']} on {summary.get('target') or summary['env_id']} ({summary['llm']})"
    acc = summary.get("accounting") or {}
    head = [f"<h1>{_e(title)}</h1>",
            f"<p class='muted'>{_e(run_path)} &middot; seed {_e(summary['seed'])} &middot; "
            f"{_e(summary['status'])} &middot; {summary['calls']} of {_e(summary['budget'])} calls"
            + (f" &middot; {acc.get('tokens', 0):,} tokens, LLM {acc.get('llm_seconds', 0):.0f} s"
               if acc else "") + "</p>"]
    if len(summary["llms"]) > 1:  # the LLM was switched on a resume (--switch-llm)
        head.append("<p id='llm-switch'>LLM switched during the run: " + "; then ".join(
            f"calls {s['first']}-{s['last']} by {_e(s['llm'])}" for s in summary["llms"]) + "</p>")
    problems = list(dict.fromkeys(summary["problems"] + problems))
    if problems:
        head.append("<div id='problems' class='panel'><b>Records that could not be read</b> "
                    "(left out below; a resume redoes a derived record deleted):<ul>"
                    + "".join(f"<li>{_e(p)}</li>" for p in problems) + "</ul></div>")
    best = summary.get("best")
    if best:
        score = "buggy" if best["buggy"] else f"{best['score']:.4f}"
        line = (f"best program ({_e(best_label(best))}): score <b>{score}</b>, floor "
                f"{_f(ref('floor'))}, ceiling {_f(ref('ceiling'))}")
        if best_held:
            line += f"; held-out <b id='best-heldout'>{_f(best_held['score'])}</b>"
        head.append(f"<p id='headline'>{line}</p>")
    from codeworld.reports._summaries import SEED_NAMES

    for seed in summary.get("seeds") or []:  # programs written from the data, before any call
        head.append(f"<p class='seed'>{_e(SEED_NAMES.get(seed['label'], seed['label']))} (no "
                    f"call): score {'buggy' if seed['buggy'] else _f(seed['score'])}, held-out "
                    f"{_f(seed.get('heldout'))}{'; the search starts from it' if seed.get('start') else ''}</p>")
    outcomes = summary.get("outcomes") or {}
    if outcomes.get("new") is not None:
        head.append(f"<p id='outcomes'>calls by outcome: {outcomes['new']} new, "
                    f"{outcomes['copy']} copies, {outcomes['buggy']} buggy</p>")
    split = summary.get("split") or {}
    if split.get("n_heldout"):
        head.append(f"<p class='muted'>held out: episodes "
                    f"{_e(', '.join(str(e) for e in split['heldout_episodes']))} of "
                    f"{_e(split['n_episodes'])} ({_e(split['n_heldout'])} transitions, never shown "
                    f"to the search)</p>")

    series: dict[str, list[float | None]] = {"training": list(train)}
    classes = {"training": "pt-train"}
    if any(v is not None for v in held):
        series["held-out"] = held
        classes["held-out"] = "pt-heldout"
    plot = line_plot(series, title="best score against LLM calls",
                     hlines={"floor": ref("floor"), "ceiling": ref("ceiling")},
                     point_class=classes)
    legend = ("Circles are programs, numbered by the call that wrote them; colour from red "
              "(at or below the floor, the do-nothing model's score) to green (the ceiling, or "
              "score 1); grey with a red cross: buggy. Edge letters: "
              "G generate, I improve, F fix. Click a circle or a plot point for its program, "
              "prompt and answer.")
    details = ("<div id='details' class='panel' hidden><h3 id='detail-title'></h3>"
               "<pre id='detail-extra'></pre><div class='row'>"
               "<div style='flex:1;min-width:0'><b>program</b><pre id='detail-program'></pre></div>"
               "<div style='flex:1;min-width:0'><b>answer</b><pre id='detail-answer'></pre></div>"
               "</div><details><summary>feedback the scorer gave</summary>"
               "<pre id='detail-feedback'></pre></details><details><summary>prompt</summary>"
               "<pre id='detail-prompt'></pre></details></div>")
    rows = []
    for number, c in calls.items():
        rows.append(f"<tr><td><a href='#details' data-call='{number}'>{number}</a></td>"
                    f"<td class='l'>{_e(c['action'])}</td><td>{_e(c['parent'] or 'root')}</td>"
                    f"<td>{'buggy' if c['buggy'] else _f(c['score'])}</td>"
                    f"<td>{_f(c['heldout'])}</td></tr>")
    call_table = ("<details><summary>every call</summary><table id='call-table'><tr><th>call</th>"
                  "<th class='l'>action</th><th>parent</th><th>score</th><th>held-out</th></tr>"
                  + "".join(rows) + "</table></details>")

    body = head + [
        "<h2>Search</h2><div class='row'><div>", plot,
        f"<p class='muted' style='max-width:34em'>{legend}</p></div>",
        "<div style='overflow:auto;max-width:100%;flex:1'>",
        tree_svg(nodes, ref("floor"), ref("ceiling")), "</div></div>",
        details, call_table]
    body.append("<h2>Best program</h2>")
    if best_record:
        program_path = run_path / "best_model.py"
        source = program_path.read_text(encoding="utf-8") if program_path.is_file() else ""
        body.append(f"<p class='muted'>{_e(program_path)}</p><pre id='best-program'>{_e(source)}</pre>")
        body.append(_components_table(best_record))
        mispredicted = [m for m in (best_record.get("mispredicted"),
                                    (best_held or {}).get("first_error")) if m]
        body.append("<h2>Mispredicted transitions</h2>")
        if mispredicted:
            body.extend(_transition_table(m) for m in mispredicted[:3])
        else:
            body.append("<p class='muted'>None: the best program predicts every recorded "
                        "transition within tolerance.</p>")
        summary_text = best_report.get("error_summary") or best_record.get("feedback")
        if summary_text:
            body.append("<details open><summary>error summary over the whole buffer, with "
                        "examples of each kind of error</summary>"
                        f"<pre>{_e(summary_text)}</pre></details>")
    else:
        body.append("<p class='muted'>No program yet.</p>")
    body.append("<h2>Repairs and fits</h2>")
    body.append(finish)
    body.append("<h2>Planning</h2>")
    body.append(_planning_html(planning))
    return _page(title, "\n".join(body), _SCRIPT, calls)


def write_run_page(run_path: str | os.PathLike, out: str | os.PathLike | None = None,
                   planning: dict | None = None) -> Path:
    """Write a run's report page (default ``RUN_DIR/report.html``; its folder is created, the
    file written atomically) and return its path.

    Raises:
        RunWriteError: the page could not be written (an OSError; nothing half-written is left).
    """
    from codeworld._files import write_atomic

    path = Path(out) if out is not None else Path(run_path) / REPORT_FILE
    write_atomic(path, run_page(run_path, planning))
    return path


# ------------------------------------------------------------------------------------ a grid


def grid_page(summary: dict, meta: dict, links: dict[str, str], table_md: str = "") -> str:
    """The HTML of a CWMB grid's page: the table, one curve per environment, links to the runs.

    Args:
        summary: `benchmarks/cwmb.py`'s aggregate (``per_env``, ``groups``).
        meta: its meta (``envs``, ``methods``, ``llm``, ``budget``, ``command``).
        links: job key -> the relative address of that run's page.
        table_md: the markdown tables, shown as text under the page's own table.
    """
    title = f"CWMB grid: {meta.get('llm')}, budget {meta.get('budget')}"
    keys = [("accuracy_sound", "accuracy (sound)"), ("accuracy_paper", "accuracy (paper rule)"),
            ("accuracy_paper_buffer", "paper rule, paper's buffers"),
            ("normalized_return", "normalized return")]
    entries = [e for by_env in summary["per_env"].values() for e in by_env.values()]
    if any(e.get("accuracy_training") is not None for e in entries):  # runs with a held-out split
        keys[0] = ("accuracy_sound", "accuracy (sound, held-out)")
        keys.insert(1, ("accuracy_training", "training"))
    if any(e.get("floor_sound") is not None for e in entries):
        keys.insert(1, ("floor_sound", "floor"))
    rows = []
    for env in meta["envs"]:
        for method in meta["methods"]:
            entry = summary["per_env"][method][env]
            cells = "".join(f"<td>{_f(entry.get(k), 3)}</td>" for k, _ in keys)
            rows.append(f"<tr><td class='l'>{_e(env)}</td><td class='l'>{_e(method)}</td>"
                        f"<td>{entry.get('seeds', 0)}</td>{cells}</tr>")
    for method in meta["methods"]:
        for group, entry in summary["groups"][method].items():
            if entry.get("envs"):
                cells = "".join(f"<td><b>{_f(entry.get(k), 3)}</b></td>" for k, _ in keys)
                rows.append(f"<tr><td class='l'><b>{_e(group)} (mean)</b></td><td class='l'>"
                            f"{_e(method)}</td><td>{entry['envs']}/{entry['of']}</td>{cells}</tr>")
    table = ("<table id='grid-table'><tr><th class='l'>environment</th><th class='l'>method</th>"
             "<th>seeds</th>" + "".join(f"<th>{_e(h)}</th>" for _, h in keys) + "</tr>"
             + "".join(rows) + "</table>")
    plots = []
    for env in meta["envs"]:
        series = {m: summary["per_env"][m][env].get("best_by_call") or [] for m in meta["methods"]}
        plots.append(f"<div class='env-plot' data-env='{_e(env)}'>"
                     + line_plot(series, title=env, width=440, height=240) + "</div>")
    link_items = "".join(f"<li><a class='run-link' href='{_e(href)}'>{_e(key)}</a></li>"
                         for key, href in sorted(links.items()))
    body = [f"<h1>{_e(title)}</h1>",
            f"<p class='muted'>{_e(meta.get('command', ''))}</p>",
            "<h2>Results</h2>", table,
            "<p class='muted'>Per environment the mean over seeds; per group the mean over "
            "environments (the return over those where it is defined).</p>",
            "<h2>Best score against LLM calls</h2>", "<div class='row'>", *plots, "</div>",
            "<h2>Runs</h2>",
            f"<ul id='runs'>{link_items}</ul>" if link_items else
            "<p class='muted'>No run directory of this grid is on this machine.</p>"]
    if table_md:
        body.append(f"<details><summary>the tables as markdown (with the paper's numbers)"
                    f"</summary><pre>{_e(table_md)}</pre></details>")
    return _page(title, "\n".join(body))


def write_grid_page(out: str | os.PathLike, summary: dict, meta: dict, records: list[dict],
                    table_md: str = "") -> Path:
    """Write ``OUT/report.html`` for a grid, and each run's page where its directory exists.

    Args:
        out: the results folder.
        summary: as for `grid_page`.
        meta: as for `grid_page`.
        records: the job records (``key``, ``result.run_dir``, ``result.planning``).
        table_md: the markdown tables.
    """
    out = Path(out)
    links = {}
    for record in records:
        result = record.get("result") or {}
        run_dir = result.get("run_dir")
        if not run_dir or not (Path(run_dir) / "run.json").is_file():
            continue
        page = write_run_page(run_dir, planning=result.get("planning"))
        links[record.get("key") or Path(run_dir).name] = Path(
            os.path.relpath(page, out.resolve())).as_posix()
    path = out / REPORT_FILE
    path.write_text(grid_page(summary, meta, links, table_md), encoding="utf-8")
    return path
