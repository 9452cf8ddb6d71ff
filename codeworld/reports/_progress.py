"""Progress lines of a long run, printed as it goes: one per LLM call of a synthesis run (the
events `codeworld.synthesis.run.Run.execute` gives its ``progress`` callback), and one per LLM
call, rewrite and episode of an agent run (those `codeworld.agent.WorldCoderAgent` gives), and a
bar over the episodes a policy plays (`codeworld.planning.evaluate`'s)."""

from __future__ import annotations

import sys
import time



def copied_what(duplicate_of: str | int) -> str:
    """What an answer copied, in words: the skeleton, a seed (``data``: the data model;
    ``floor``: the do-nothing model) or an earlier call (numbered from 1)."""
    if isinstance(duplicate_of, int):
        return f"call {duplicate_of}"
    return {"skeleton": "the skeleton", "data": "the data model",
            "floor": "the do-nothing model"}.get(duplicate_of, f"the {duplicate_of} program")

def agent_progress_printer(stream=None, started: float | None = None):
    """A line per LLM call, rewrite and episode of an agent run."""
    stream = stream or sys.stdout
    started = time.perf_counter() if started is None else started

    def show(e: dict) -> None:
        clock = f"{time.perf_counter() - started:6.0f}s"
        if e["event"] == "call":
            status = "buggy" if e["buggy"] else f"{e['score']:.3f}"
            copy = (f"  (a copy of {copied_what(e['duplicate_of'])})"
                    if e.get("duplicate_of") is not None else "")
            line = (f"    call {e['call'] + 1}/{e['budget']} {e['action']:<8} -> {status:<6} "
                    f"best {e['best']:.3f}  tokens {e['tokens']:,}{copy}")
        elif e["event"] == "rewrite":
            verdict = "accepted" if e["accepted"] else "not accepted"
            line = (f"  {e['level']}: rewrite {e['index'] + 1} ({e['reason']}) after "
                    f"{e['env_steps']} steps: {e['calls']} calls, {verdict}; level total "
                    f"{e['llm_calls']} calls, {e['level_tokens']:,} tokens")
        else:
            outcome = "success" if e["success"] else "no success"
            line = (f"  {e['level']}: episode {e['episode'] + 1}: {outcome} in {e['steps']} steps"
                    f" ({e['contradictions']} contradictions); level total {e['env_steps']} steps, "
                    f"{e['llm_calls']} calls")
        print(f"{line}  {clock}", file=stream, flush=True)

    return show


def progress_printer(budget: int, stream=None, started: float | None = None):
    """A progress callback printing one line per call: calls used, action, score, best, tokens."""
    stream = stream or sys.stdout
    started = time.perf_counter() if started is None else started

    def show(event: dict) -> None:
        status = "buggy" if event["buggy"] else f"{event['score']:.4f}"
        tag = " (saved)" if event["replayed"] else ""
        if event.get("duplicate_of") is not None:
            tag += f"  (a copy of {copied_what(event['duplicate_of'])})"
        if event.get("fitted_from") is not None:
            tag += f"  (constants fitted: {event['fitted_from']:.4f} before)"
        print(f"  call {event['call'] + 1:>3}/{budget}  {event['action']:<8} -> {status:<7}"
              f" best {event['best']:.4f}  tokens {event['tokens']:>7,}"
              f"  {time.perf_counter() - started:6.0f}s{tag}", file=stream, flush=True)

    return show


class EpisodeProgressBar:
    """A one-line progress display on stderr (only on a terminal) of seeded episodes: the
    ``progress(policy, episode, step)`` callback of `codeworld.planning.evaluate`."""

    def __init__(self, episodes: int):
        self.episodes = episodes
        self.enabled = sys.stderr.isatty()
        self._last = ""

    def __call__(self, policy: str, episode: int, step: int) -> None:
        if not self.enabled or step % 10:
            return
        done = int(20 * episode / max(1, self.episodes))
        line = f"\r{policy:>6} [{'#' * done}{'.' * (20 - done)}] episode {episode + 1}/{self.episodes} step {step}"
        if line != self._last:
            sys.stderr.write(line)
            sys.stderr.flush()
            self._last = line

    def close(self) -> None:
        if self.enabled and self._last:
            sys.stderr.write("\r" + " " * len(self._last) + "\r")
            sys.stderr.flush()
