"""GIF-MCTS: Monte Carlo tree search over programs whose moves are LLM calls.

Dainese et al., NeurIPS 2024 (arXiv 2405.15383). A node is a program; the root is the empty
program. One simulation selects a path by UCT, expands one new child with one LLM call
(*generate*, *improve* or *fix*), scores the child's program and backs the score up.

The rules, as implemented here:

* **Options.** The root offers *generate*. A healthy node always offers one more *generate* and
  one more *improve* (taking one opens the next of the same kind). A buggy node offers only
  *fix*, one at a time: a fix that is still buggy continues the *fix chain* from the new node.
* **Fix chain.** Every node of a buggy chain is valued at ``bug_values[k]`` after ``k`` failed
  fixes (0.99, 0.66, 0.33, then 0). After ``fix_limit`` failed fixes the whole chain is a dead
  end (terminal, value 0). When a fix succeeds, every buggy node of the chain takes the fixed
  program's score: they are the same program, repaired.
* **Values.** Each simulation adds exactly one node, so a node's visit count is the size of its
  subtree and its value is the mean of the values of the nodes in its subtree (the node included):
  exactly what backing up each new node's value along its path gives, with the fix-chain values
  kept current.
* **Selection.** UCT with ``c = 0.1``: an expanded child scores ``Q + c sqrt(ln N / (n + 1))``;
  an unexpanded action of type ``t`` scores ``prior(t) + c sqrt(ln N / (m_t + 1))``, where
  ``m_t`` counts the node's children made by ``t`` and ``prior(t)`` is the running mean of the
  values that ``t`` expansions produced so far, started at the paper's prior worth
  ``prior_count`` observations. Ties are broken by a seeded generator.
* **Partial programs.** A node keeps the first ``parent's + L`` lines of its program; a
  *generate* from it asks the LLM to continue those lines. *Improve* shows the node's program
  and one mispredicted transition; *fix* shows the program and its error.
* **Parallel waves.** With ``parallel = k`` the search selects ``k`` expansions before any
  returns; each selected one is a pending child counting one visit at ``virtual_loss``, which
  steers the later selections of the wave elsewhere. With ``k = 1`` this is the paper's loop.
* **Stalls.** An improvement that leaves the score of the program it improved where it was
  (a copy of it, or the same program reworded) *stalled*. Once ``stall_limit`` improvements of
  one program have stalled, counting those of the programs linked to it by stalled improvements
  (the same program as far as the score can tell), none of them offers *improve* again: asking
  again buys the same answer, and the calls go to *generate* and to other programs instead.
  (Not in the paper, whose large models rarely answer an improve with the program they were
  shown; ``stall_limit = None`` is its rule.)
* **Seeds.** Programs the world wrote before the search (the data model, the floor: `Seed`)
  are children of the root, scored, never counted as calls. A seed that is a *start* is where
  the search begins: the root then writes nothing from scratch, and the seed's *generate*
  continues its first lines. A seed that is not a start is only a candidate for the best
  program: it offers no action. (Not in the paper, whose search starts from the empty program.)
* **Stop** when a program scores at least ``1 - perfect_tolerance``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from codeworld.synthesis.config import AssistConfig, SamplingConfig
from codeworld.synthesis.types import (FIX, GENERATE, IMPROVE, Outcome, ProgramEvaluation, Request,
                                       Seed, copies_note, made_no_progress, seed_call,
                                       with_no_progress_note)

ROOT = "root"
_TIE_EPS = 1e-12


@dataclass(frozen=True)
class GifMctsConfig:
    """GIF-MCTS (generate, improve, fix) over programs; one simulation is one LLM call.

    Attributes:
        ucb_c: exploration constant of UCT, ``Q + c * sqrt(ln N(parent) / (n + 1))``; paper: 0.1.
        prior_generate: initial value of an unexpanded *generate* action; paper: 0.5.
        prior_improve: initial value of an unexpanded *improve* action; paper: 0.55.
        prior_fix: initial value of an unexpanded *fix* action; paper: 0.5.
        prior_count: how many observations each initial prior is worth in the running mean of
            the values that expansions of that action type produced; paper: 2.
        fix_limit: fixes tried in a row on a buggy program before it is given up (value 0);
            paper: f = 3.
        bug_values: the temporary value of a buggy node after 0, 1, ..., fix_limit failed fixes;
            paper: 0.99, 0.66, 0.33, 0 (evenly spaced from 0.99 down to 0).
        lines_per_generate: L, how many more lines of its program a generate node keeps for its
            own generate children to continue; paper: 2.
        allow_generate: ablation switch; off, only the root's first generate is offered.
        allow_improve: ablation switch; off, no improve action is offered.
        allow_fix: ablation switch; off, a buggy program is a dead end with value 0.
        parallel: k, LLM calls issued at once per wave, with virtual loss in selection; 1 is the
            paper's sequential algorithm.
        virtual_loss: the value a pending expansion counts with while its call runs.
        perfect_tolerance: the search stops once a program scores at least ``1 - tolerance``.
        stall_limit: a program offers no more *improve* once this many improvements of it, or
            of the programs linked to it by stalled improvements, left the score where it was;
            None: no limit, the paper's rule (see Stalls in the module docstring).
        sampling: sampling settings of every call.
        assist: scaffold, checks and repairs, error summaries (shared by every method).
    """

    ucb_c: float = 0.1
    prior_generate: float = 0.5
    prior_improve: float = 0.55
    prior_fix: float = 0.5
    prior_count: float = 2.0
    fix_limit: int = 3
    bug_values: tuple[float, ...] = (0.99, 0.66, 0.33, 0.0)
    lines_per_generate: int = 2
    allow_generate: bool = True
    allow_improve: bool = True
    allow_fix: bool = True
    parallel: int = 1
    virtual_loss: float = 0.0
    perfect_tolerance: float = 1e-6
    stall_limit: int | None = 2
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    assist: AssistConfig = field(default_factory=AssistConfig)

    # What a saved config without these (older) fields was made with.
    ABSENT_IN_OLDER_RUNS: ClassVar[dict] = {"stall_limit": None}

    def __post_init__(self) -> None:
        if len(self.bug_values) != self.fix_limit + 1:
            raise ValueError(f"bug_values needs fix_limit + 1 = {self.fix_limit + 1} entries, "
                             f"got {len(self.bug_values)}")
        if self.parallel < 1:
            raise ValueError("parallel must be at least 1")
        if self.lines_per_generate < 0:
            raise ValueError("lines_per_generate must be non-negative")
        if self.stall_limit is not None and self.stall_limit < 1:
            raise ValueError("stall_limit must be at least 1 (or None: no limit)")


# The paper's Table 6: one kind of GIF-MCTS action switched off.
ACTION_ABLATIONS: dict[str, dict] = {
    "no-generate": {"allow_generate": False},
    "no-improve": {"allow_improve": False},
    "no-fix": {"allow_fix": False},
}


@dataclass
class Node:
    """One program in the tree. The root (id 0) holds the empty program."""

    id: int
    parent: int
    action: str
    depth: int
    prefix_lines: int = 0
    program: str = ""
    pending: bool = False
    score: float = 0.0
    buggy: bool = False
    feedback: str = ""
    mispredicted: dict | None = None
    failed_fixes: int = 0
    children: list[int] = field(default_factory=list)
    duplicate: bool = False
    call: int | None = None
    seed: str = ""
    start: bool = False

    def to_json(self) -> dict:
        return {
            "id": self.id, "parent": self.parent, "action": self.action, "depth": self.depth,
            "prefix_lines": self.prefix_lines, "pending": self.pending, "score": self.score,
            "buggy": self.buggy, "failed_fixes": self.failed_fixes, "children": list(self.children),
            **({"duplicate": True} if self.duplicate else {}),
            **({"seed": self.seed, "start": self.start} if self.seed else {}),
        }


@dataclass(frozen=True)
class Candidate:
    """One choice at a node during selection: an expanded child or an unexpanded action."""

    kind: str  # "child" or "action"
    target: int | str  # a child id, or an action name
    value: float
    bonus: float

    @property
    def uct(self) -> float:
        return self.value + self.bonus


class GifMcts:
    """The GIF-MCTS search state; see the module docstring for the rules.

    Args:
        config: the hyperparameters (paper defaults).
        seed: seeds the tie-breaking generator.
    """

    method = "gif-mcts"

    def __init__(self, config: GifMctsConfig | None = None, seed: int = 0):
        self.config = config or GifMctsConfig()
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Node] = [Node(id=0, parent=-1, action=ROOT, depth=0)]
        self.calls = 0
        self.stopped_perfect = False
        self._prior_sum = {GENERATE: self.config.prior_generate * self.config.prior_count,
                           IMPROVE: self.config.prior_improve * self.config.prior_count,
                           FIX: self.config.prior_fix * self.config.prior_count}
        self._prior_n = {a: self.config.prior_count for a in (GENERATE, IMPROVE, FIX)}
        self.trace: list[dict] = []
        self._node_of_call: dict[int, int] = {}

    # ----------------------------------------------------------------------------- values

    def prior(self, action: str) -> float:
        """The running value of an unexpanded ``action`` (paper prior plus observed values)."""
        return self._prior_sum[action] / self._prior_n[action]

    def _chain(self, node_id: int) -> tuple[list[int], int | None]:
        """The buggy fix chain through ``node_id``: its buggy nodes and the node it ends in.

        The chain starts at the buggy node made by a non-fix action (or by a fix of a healthy
        node, which cannot happen) and follows fix children while they are buggy. The end is the
        healthy fix child that repaired it, or None while the chain is still buggy.
        """
        nodes = self.nodes
        start = node_id
        while nodes[start].action == FIX and nodes[nodes[start].parent].buggy:
            start = nodes[start].parent
        members = [start]
        end: int | None = None
        current = start
        while True:
            fixes = [c for c in nodes[current].children
                     if nodes[c].action == FIX and not nodes[c].pending]
            if not fixes:
                break
            child = fixes[0]
            if nodes[child].buggy:
                members.append(child)
                current = child
            else:
                end = child
                break
        return members, end

    def own_value(self, node_id: int) -> float:
        """The value a node contributes by itself: its score, its fix chain's value, or virtual loss."""
        node = self.nodes[node_id]
        if node.pending:
            return self.config.virtual_loss
        if node_id == 0:
            return 0.0
        if not node.buggy:
            return node.score
        members, end = self._chain(node_id)
        if end is not None:
            return self.nodes[end].score
        if not self.config.allow_fix:
            return self.config.bug_values[-1]
        return self.config.bug_values[min(self.nodes[members[-1]].failed_fixes,
                                          self.config.fix_limit)]

    def is_dead(self, node_id: int) -> bool:
        """A buggy node whose chain used up its fixes (or fixing is switched off)."""
        node = self.nodes[node_id]
        if node.pending or not node.buggy:
            return False
        if not self.config.allow_fix:
            return True
        members, end = self._chain(node_id)
        return end is None and self.nodes[members[-1]].failed_fixes >= self.config.fix_limit

    def _subtree(self, node_id: int) -> tuple[int, float]:
        count, total = 1, self.own_value(node_id)
        for child in self.nodes[node_id].children:
            c, t = self._subtree(child)
            count += c
            total += t
        return count, total

    def visits(self, node_id: int) -> int:
        """N: nodes in the subtree (pending ones included: one simulation made each)."""
        return self._subtree(node_id)[0]

    def value(self, node_id: int) -> float:
        """Q: the mean value of the nodes in the subtree, the node's own value included."""
        count, total = self._subtree(node_id)
        return total / count

    # ----------------------------------------------------------------------------- options

    def open_actions(self, node_id: int) -> list[str]:
        """The unexpanded actions a node offers now."""
        node = self.nodes[node_id]
        cfg = self.config
        if node.pending or self.is_dead(node_id) or node.duplicate:
            return []  # a copy's expansions would repeat those of the program it copies
        if node.seed and not node.start:
            return []  # a candidate for the best program, not a starting point
        if node_id == 0:
            if any(self.nodes[c].start for c in node.children):
                return []  # the search starts from the seed, not from nothing
            has_child = any(not self.nodes[c].seed for c in node.children)
            return [GENERATE] if (cfg.allow_generate or not has_child) else []
        if node.buggy:
            if any(self.nodes[c].action == FIX for c in node.children):
                return []
            return [FIX]
        actions = []
        if cfg.allow_generate:
            actions.append(GENERATE)
        if cfg.allow_improve and (cfg.stall_limit is None
                                  or self.stalls(node_id) < cfg.stall_limit):
            actions.append(IMPROVE)
        return actions

    def selectable(self, node_id: int) -> bool:
        """Whether selection can still make a new node somewhere below (or at) this node."""
        if self.open_actions(node_id):
            return True
        return any(self.selectable(c) for c in self.nodes[node_id].children
                   if not self.nodes[c].pending)

    def candidates(self, node_id: int) -> list[Candidate]:
        """The UCT candidates at a node: selectable children, then open actions."""
        node = self.nodes[node_id]
        log_n = math.log(self.visits(node_id))
        c = self.config.ucb_c
        out = []
        for child in node.children:
            if self.nodes[child].pending or not self.selectable(child):
                continue
            bonus = c * math.sqrt(log_n / (self.visits(child) + 1))
            out.append(Candidate("child", child, self.value(child), bonus))
        for action in self.open_actions(node_id):
            made = sum(1 for ch in node.children if self.nodes[ch].action == action)
            bonus = c * math.sqrt(log_n / (made + 1))
            out.append(Candidate("action", action, self.prior(action), bonus))
        return out

    # ----------------------------------------------------------------------------- search

    @property
    def finished(self) -> bool:
        return self.stopped_perfect or not self.selectable(0)

    def _select(self) -> tuple[int, str, list[int]]:
        node_id = 0
        path = [0]
        while True:
            cands = self.candidates(node_id)
            best = max(cand.uct for cand in cands)
            tied = [cand for cand in cands if cand.uct >= best - _TIE_EPS]
            pick = tied[int(self.rng.integers(len(tied)))] if len(tied) > 1 else tied[0]
            if pick.kind == "action":
                return node_id, str(pick.target), path
            node_id = int(pick.target)
            path.append(node_id)

    def propose(self, max_requests: int) -> list[Request]:
        """Select up to ``max_requests`` expansions (virtual loss between them) as LLM requests."""
        requests = []
        wave = min(max_requests, self.config.parallel)
        for _ in range(wave):
            if self.finished:
                break
            parent_id, action, path = self._select()
            parent = self.nodes[parent_id]
            child = Node(id=len(self.nodes), parent=parent_id, action=action,
                         depth=parent.depth + 1, pending=True,
                         prefix_lines=parent.prefix_lines + self.config.lines_per_generate,
                         call=self.calls)
            self.nodes.append(child)
            self._node_of_call[self.calls] = child.id
            parent.children.append(child.id)
            request = Request(
                call=self.calls, action=action, parent=parent_id,
                program="" if action == GENERATE else parent.program,
                prefix=_first_lines(parent.program, parent.prefix_lines) if action == GENERATE else "",
                feedback=(self._generate_note(parent) if action == GENERATE
                          else self._improve_feedback(parent) if action == IMPROVE
                          else parent.feedback),
                mispredicted=parent.mispredicted if action == IMPROVE else None)
            self.calls += 1
            self.trace.append({"call": request.call, "node": child.id, "action": action,
                               "parent": parent_id, "path": path})
            requests.append(request)
        return requests

    def node_of(self, request: Request) -> Node:
        """The node a request created."""
        return self.nodes[self._node_of_call[request.call]]

    def seed(self, k: int, seed: Seed, evaluation: ProgramEvaluation, start: bool) -> None:
        """The world's ``k``-th seed program as a child of the root (see Seeds in the module
        docstring), before any call."""
        if self.calls:
            raise ValueError("seeds come before the first call")
        buggy = bool(evaluation.buggy)
        node = Node(id=len(self.nodes), parent=0, action=seed.label, depth=1,
                    prefix_lines=seed.prefix_lines, program=seed.program,
                    score=0.0 if buggy else float(evaluation.score), buggy=buggy,
                    feedback=evaluation.feedback, mispredicted=evaluation.mispredicted,
                    call=seed_call(k), seed=seed.label, start=bool(start) and not buggy)
        self.nodes.append(node)
        self.nodes[0].children.append(node.id)
        if not buggy and node.score >= 1.0 - self.config.perfect_tolerance:
            self.stopped_perfect = True

    def apply(self, request: Request, outcome: Outcome) -> None:
        """Fill the pending node of ``request`` with its program and score; update the priors."""
        node = self.node_of(request)
        if not node.pending:
            raise ValueError(f"call {request.call} was already applied")
        evaluation = outcome.evaluation
        node.pending = False
        # An answer without code leaves the program it was asked to change (or continue) as it
        # was, so that a fix of this node shows that program again, not an empty one.
        node.program = outcome.program if outcome.program is not None else (
            request.program or request.prefix)
        node.buggy = bool(evaluation.buggy)
        node.score = 0.0 if node.buggy else float(evaluation.score)
        node.feedback = evaluation.feedback
        node.mispredicted = evaluation.mispredicted
        node.duplicate = evaluation.report.get("duplicate_of") is not None
        parent = self.nodes[node.parent]
        if node.buggy and node.action == FIX and parent.buggy:
            node.failed_fixes = parent.failed_fixes + 1
        self._prior_sum[node.action] += node.score
        self._prior_n[node.action] += 1
        if not node.buggy and node.score >= 1.0 - self.config.perfect_tolerance:
            self.stopped_perfect = True

    def _generate_note(self, parent: Node) -> str:
        """The note of a generate request at `parent` whose earlier generates gave copies."""
        if not self.config.assist.copies:
            return ""
        copies = sum(1 for c in parent.children
                     if self.nodes[c].action == GENERATE and self.nodes[c].duplicate)
        return copies_note(copies) if copies else ""

    def stalled(self, node: Node) -> bool:
        """An improvement that left the score of the program it improved where it was."""
        parent = self.nodes[node.parent]
        return not node.pending and made_no_progress(node.action, node.buggy, node.score,
                                                     parent.buggy, parent.score)

    def stalls(self, node_id: int) -> int:
        """Stalled improvements of a program, counted over every program that is the same as far
        as the score can tell: the chain of stalled improvements it belongs to."""
        base = node_id
        while base != 0 and self.stalled(self.nodes[base]):
            base = self.nodes[base].parent
        count, frontier = 0, [base]
        while frontier:
            for child in self.nodes[frontier.pop()].children:
                if self.stalled(self.nodes[child]):
                    count += 1
                    frontier.append(child)
        return count

    def _improve_feedback(self, parent: Node) -> str:
        """The feedback of an improve request at `parent`: its own, and a note when earlier
        improvements of it made no progress."""
        if not self.config.assist.copies:
            return parent.feedback
        stalls = sum(1 for c in parent.children if self.stalled(self.nodes[c]))
        return with_no_progress_note(parent.feedback, stalls, parent.score)

    def best(self) -> tuple[int, str, ProgramEvaluation] | None:
        """The highest-scoring healthy program (earliest on ties), else the first program."""
        done = [n for n in self.nodes[1:] if not n.pending]
        if not done:
            return None
        best = max(done, key=lambda n: (not n.buggy, n.score, -n.id))
        return best.call, best.program, ProgramEvaluation(best.score, best.buggy, best.feedback,
                                                          best.mispredicted)

    def programs(self) -> list[dict]:
        """The programs the calls wrote so far, method-neutral (see `Search.programs`); a
        program refined from a seed names it (``parent_seed``)."""
        out = []
        for n in self.nodes[1:]:
            if n.pending or n.seed:
                continue
            parent = self.nodes[n.parent]
            record = {"call": n.call, "parent_call": parent.call if parent.call is not None
                      and parent.call >= 0 else -1, "action": n.action, "score": n.score,
                      "buggy": n.buggy}
            if parent.seed:
                record["parent_seed"] = parent.seed
            out.append(record)
        return out

    def to_json(self) -> dict:
        nodes = []
        for node in self.nodes:
            record = node.to_json()
            record["value"] = self.value(node.id)
            record["visits"] = self.visits(node.id)
            record["dead"] = self.is_dead(node.id)
            record["call"] = node.call
            nodes.append(record)
        return {"method": self.method, "calls": self.calls, "stopped_perfect": self.stopped_perfect,
                "no_progress": sum(1 for n in self.nodes[1:] if self.stalled(n)),
                "priors": {a: self.prior(a) for a in (GENERATE, IMPROVE, FIX)},
                "nodes": nodes, "trace": self.trace}


def _first_lines(program: str, n: int) -> str:
    if n <= 0 or not program:
        return ""
    lines = program.splitlines(keepends=True)
    return "".join(lines[:n])
