"""LLM speed of the embedded model on a CPU: the old server settings against the new, in one run.

Part 1 replays a fixed, committed set of real prompts (``benchmarks/llm_speed_prompts.json``: a
*generate*, *improve* and *fix* prompt of one CWMB CartPole run with the embedded model, built by
codeworld's CWMB prompt builder as its ``source`` field says, in a run's order) on one
server per configuration, all started in this process, interleaved call by call (A B A B), so that
the machine's load falls alike on each. Each server sees the prompts in the run's order, so that
its prompt cache serves them as in a run: the first call processes the whole prompt, the later
ones only what follows the shared part (the server reports ``cache_n``). It prints seconds per
call, prompt tokens/s and generated tokens/s (from the server's own timings), the speculative
drafts accepted, and the ratios against the first configuration. Sampling is greedy
(temperature 0), the completion cache is not involved (the server is asked directly), and an
answer that differs between configurations is reported.

Configurations (``--configs``, the first is the baseline; ``NAME:field=value`` changes a field
of `ServerSettings`, e.g. ``new:draft_max=8``):

* ``old``: the settings before this benchmark existed: the ``xllamacpp`` wheel, threads = cores
  less the 1-minute load average (read when the server starts), no speculation, one slot,
  threads that sleep at once between operations (poll 0);
* ``new``: `codeworld.llm._local.ServerSettings` defaults (every core, n-gram speculation, the
  native engine where ``codeworld build-llm`` has built it, else the wheel);
* ``wheel``: the new settings on the ``xllamacpp`` wheel (what they give without the build);
* ``nospec``: the new settings without speculation;
* ``ngram``: the new settings with short n-gram drafts (4 tokens after 3 matching ones) instead
  of ``ngram-mod``'s long ones;
* ``draft``: the new settings with the 0.5B draft model instead of n-gram lookup (needs the
  ``draft`` extra);
* ``old-threads``: the new settings with the old thread policy.

Part 2 runs K = 1, 2, 4 requests at once on one server with 4 slots (the new settings, on each
engine this machine has): each
slot first processes its prompt (one token asked), then the K requests go together, each pinned
to its slot and generating ``--parallel-tokens`` tokens (end of text ignored), and the total
generated tokens per second of the K requests is compared with K = 1. With ``--parallel-threads
1,2`` it runs once per thread count, and the report compares one request's speed on each: where
generation is bound by memory bandwidth, decoding several sequences together is nearly free and
more threads do not help; where it is bound by compute, both go the other way. With
``--parallel-speculation none,ngram-mod`` it runs once per speculation kind (what the default
for several slots was chosen by).

Usage::

    python benchmarks/llm_speed.py [--configs old,new] [--max-tokens 512] [--parallel 1,2,4]
        [--parallel-tokens 96] [--parallel-threads 1,2] [--parallel-engines native]
        [--parallel-speculation none,ngram-mod]
        [--skip-parallel] [--out benchmarks/results/llm_speed]
    python benchmarks/llm_speed.py --make-prompts RUN_DIR   # a run's first generate, improve, fix
    python benchmarks/llm_speed.py --markdown-only           # OUT.md again from OUT.json

Writes ``OUT.json`` and ``OUT.md``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import platform
import shlex
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = ROOT / "benchmarks" / "llm_speed_prompts.json"
OUT = ROOT / "benchmarks" / "results" / "llm_speed"


def old_thread_policy() -> int:
    """The thread count the local backend chose before: cores less the rounded 1-minute load."""
    cores = len(os.sched_getaffinity(0))
    return max(1, cores - int(os.getloadavg()[0] + 0.5))


def config_settings(name: str):
    """A named configuration; ``NAME:field=value:...`` changes `ServerSettings` fields of it
    (``new:draft_max=8``)."""
    from dataclasses import fields, replace

    from codeworld.llm._local import ServerSettings

    if ":" in name:
        base, *changes = name.split(":")
        types = {f.name: f.type for f in fields(ServerSettings)}
        values = {}
        for change in changes:
            key, _, value = change.partition("=")
            if key not in types:
                raise SystemExit(f"llm_speed: ServerSettings has no field {key!r}")
            values[key] = (int(value) if value.lstrip("-").isdigit() else
                           {"true": True, "false": False}.get(value.lower(), value))
        return replace(config_settings(base), **values)
    if name == "old":
        return ServerSettings(threads=old_thread_policy(), speculation="none", engine="xllamacpp",
                              poll=0)
    if name == "new":
        return ServerSettings()
    if name == "wheel":
        return ServerSettings(engine="xllamacpp")
    if name == "nospec":
        return ServerSettings(speculation="none")
    if name == "draft":
        return ServerSettings(speculation="draft")
    if name == "ngram":
        return ServerSettings(speculation="ngram")
    if name == "old-threads":
        return ServerSettings(threads=old_thread_policy())
    raise SystemExit(f"llm_speed: unknown configuration {name!r}")


def machine() -> str:
    """The architecture, core count, CPU model and the vector instruction sets llama.cpp uses."""
    from codeworld.llm._native import cpu_flags

    model = ""
    try:
        model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                      if line.startswith("model name")), "")
    except OSError:
        pass
    simd = sorted((cpu_flags() or set()) & {"avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8"})
    parts = [platform.machine(), f"{len(os.sched_getaffinity(0))} cores", model,
             " ".join(simd) or "no AVX2"]
    return ", ".join(p for p in parts if p)


def load1() -> float:
    return round(os.getloadavg()[0], 2)


def call(server, messages: list[dict], max_tokens: int, **extra) -> dict:
    """One greedy request; its wall time, the server's timings and a digest of its answer."""
    body = {"messages": messages, "temperature": 0.0, "max_tokens": max_tokens, "seed": 0, **extra}
    load = load1()
    started = time.perf_counter()
    response = server.request(body)
    seconds = time.perf_counter() - started
    timings = response.get("timings", {})
    text = response["choices"][0]["message"]["content"] or ""
    return {
        "seconds": seconds,
        "load1": load,
        "prompt_n": timings.get("prompt_n", 0),
        "cache_n": timings.get("cache_n", 0),
        "prompt_s": timings.get("prompt_ms", 0.0) / 1000,
        "predicted_n": timings.get("predicted_n", 0),
        "predicted_s": timings.get("predicted_ms", 0.0) / 1000,
        "draft_n": timings.get("draft_n", 0),
        "draft_accepted": timings.get("draft_n_accepted", 0),
        "finish": response["choices"][0].get("finish_reason"),
        "text_sha256": hashlib.sha256(text.encode()).hexdigest()[:16],
    }


def rate(tokens: float, seconds: float) -> float | None:
    return tokens / seconds if seconds > 0 else None


def summarize(rows: list[dict]) -> dict:
    prompt_n = sum(r["prompt_n"] for r in rows)
    predicted_n = sum(r["predicted_n"] for r in rows)
    return {
        "calls": len(rows),
        "median_s": statistics.median(r["seconds"] for r in rows),
        "total_s": sum(r["seconds"] for r in rows),
        "prompt_tokens_processed": prompt_n,
        "prompt_tokens_cached": sum(r["cache_n"] for r in rows),
        "prompt_tok_s": rate(prompt_n, sum(r["prompt_s"] for r in rows)),
        "generated_tokens": predicted_n,
        "gen_tok_s": rate(predicted_n, sum(r["predicted_s"] for r in rows)),
        "draft_tokens": sum(r["draft_n"] for r in rows),
        "draft_accepted": sum(r["draft_accepted"] for r in rows),
    }


def part1(prompts: list[dict], configs: list[str], max_tokens: int) -> dict:
    from codeworld.llm._local import LocalServer, ensure_model_file

    model = ensure_model_file()
    servers, described = {}, {}
    for name in configs:  # threads of the old policy are read as that server starts, as before
        settings = config_settings(name).resolved()
        servers[name] = LocalServer(model, settings)
        described[name] = (f"{settings.engine}, {settings.threads} threads, speculation "
                           f"{settings.speculation}, {settings.slots} slot(s), repack "
                           f"{'on' if settings.repack else 'off'}")
        print(f"  {name}: {settings} (load {load1()})", flush=True)
    rows: dict[str, list[dict]] = {name: [] for name in configs}
    try:
        for i, prompt in enumerate(prompts):
            # A B, then B A: neither configuration always goes first.
            order = configs if i % 2 == 0 else configs[::-1]
            for name in order:
                row = call(servers[name], prompt["messages"], max_tokens)
                row["prompt"] = prompt["id"]
                rows[name].append(row)
                print(f"  {prompt['id']:<10} {name:<12} {row['seconds']:7.1f} s  prompt {row['prompt_n']:5d} "
                      f"new + {row['cache_n']:5d} cached  gen {row['predicted_n']:4d}  drafts "
                      f"{row['draft_accepted']}/{row['draft_n']}  load {row['load1']}", flush=True)
    finally:
        for server in servers.values():
            server.close()
    summary = {name: summarize(rows[name]) for name in configs}
    base = summary[configs[0]]
    for name in configs:
        s = summary[name]
        s["speedup_median_s"] = base["median_s"] / s["median_s"]
        s["speedup_prompt_tok_s"] = (s["prompt_tok_s"] / base["prompt_tok_s"]
                                     if s["prompt_tok_s"] and base["prompt_tok_s"] else None)
        s["speedup_gen_tok_s"] = (s["gen_tok_s"] / base["gen_tok_s"]
                                  if s["gen_tok_s"] and base["gen_tok_s"] else None)
    # Per prompt, the configurations grouped by identical answers: speculation must not split a
    # group of its own thread count (a different thread count may round differently).
    same = {}
    for p in prompts:
        groups: dict[str, list[str]] = {}
        for name in configs:
            for r in rows[name]:
                if r["prompt"] == p["id"]:
                    groups.setdefault(r["text_sha256"], []).append(name)
        same[p["id"]] = sorted(groups.values())
    return {"rows": rows, "summary": summary, "same_answer": same, "settings": described}


def part2(prompts: list[dict], ks: list[int], tokens: int, engine: str | None = None,
          threads: int | None = None, speculation: str | None = None) -> dict:
    from codeworld.llm._local import LocalServer, ServerSettings, ensure_model_file

    slots = max(ks)
    settings = ServerSettings(slots=slots, engine=engine, threads=threads, speculation=speculation)
    server = LocalServer(ensure_model_file(), settings)
    settings = settings.resolved()
    print(f"  {settings}", flush=True)
    results = []
    try:
        for slot in range(slots):  # each slot holds its prompt, so that the runs below only decode
            call(server, prompts[slot % len(prompts)]["messages"], 1, id_slot=slot)
        for k in ks:
            out: list[dict | None] = [None] * k

            def one(slot: int) -> None:
                out[slot] = call(server, prompts[slot % len(prompts)]["messages"], tokens,
                                 id_slot=slot, ignore_eos=True)

            load = load1()
            started = time.perf_counter()
            threads = [threading.Thread(target=one, args=(slot,)) for slot in range(k)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall = time.perf_counter() - started
            generated = sum(r["predicted_n"] for r in out)
            results.append({"k": k, "wall_s": wall, "generated": generated,
                            "gen_tok_s": generated / wall, "load1": load, "rows": out})
            print(f"  K={k}: {generated} tokens in {wall:.1f} s = {generated / wall:.2f} tokens/s "
                  f"(load {load})", flush=True)
    finally:
        server.close()
    for r in results:
        r["ratio_to_k1"] = r["gen_tok_s"] / results[0]["gen_tok_s"]
    return {"settings": repr(settings), "engine": settings.engine, "threads": settings.threads,
            "speculation": settings.speculation,
            "tokens_per_request": tokens, "results": results}


def fmt(value, spec=".2f") -> str:
    return "-" if value is None else format(value, spec)


def markdown(report: dict) -> str:
    lines = [f"# LLM speed of the embedded model ({report['date']})", "",
             f"`{report['command']}`", "",
             f"Machine: {report['machine']}; 1-minute load average {report['load_start']} at the "
             f"start, {report['load_end']} at the end (the benchmark's own threads count in it).", ""]
    p1 = report.get("part1")
    if p1:
        configs = list(p1["summary"])
        lines += [f"## Real prompts, configurations interleaved (baseline `{configs[0]}`)", "",
                  "| config | settings | median s/call | prompt tok/s | generated tok/s | drafts accepted "
                  "| median speedup | prompt speedup | generation speedup |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for name, s in p1["summary"].items():
            lines.append(f"| {name} | {p1['settings'][name]} | {fmt(s['median_s'], '.1f')} | "
                         f"{fmt(s['prompt_tok_s'], '.1f')} | {fmt(s['gen_tok_s'], '.1f')} | "
                         f"{s['draft_accepted']}/{s['draft_tokens']} | {fmt(s['speedup_median_s'])}x | "
                         f"{fmt(s['speedup_prompt_tok_s'])}x | {fmt(s['speedup_gen_tok_s'])}x |")
        lines += ["", "| prompt | config | s | prompt tokens new + cached | generated | load |",
                  "|---|---|---|---|---|---|"]
        for name, rows in p1["rows"].items():
            for r in rows:
                lines.append(f"| {r['prompt']} | {name} | {r['seconds']:.1f} | {r['prompt_n']} + "
                             f"{r['cache_n']} | {r['predicted_n']} | {r['load1']} |")
        same = "; ".join(f"{k}: " + " | ".join(" = ".join(g) for g in groups)
                         for k, groups in p1["same_answer"].items())
        lines += ["", f"Identical greedy answers (configurations grouped by answer): {same}.", ""]
    p2 = report.get("part2")
    for run in ([p2] if isinstance(p2, dict) else p2 or []):  # one run per engine
        lines += ["## Parallel requests on one server", "",
                  f"{run['settings']}; {run['tokens_per_request']} tokens per request.", "",
                  "| K | wall s | generated tokens | total tok/s | ratio to K=1 | load |",
                  "|---|---|---|---|---|---|"]
        for r in run["results"]:
            lines.append(f"| {r['k']} | {r['wall_s']:.1f} | {r['generated']} | {r['gen_tok_s']:.2f} | "
                         f"{r['ratio_to_k1']:.2f}x | {r['load1']} |")
        lines.append("")
    lines += _threads_summary(p2 if isinstance(p2, list) else [])
    return "\n".join(lines)


def _threads_summary(runs: list[dict]) -> list[str]:
    """Where part 2 ran one engine on several thread counts: one request's tokens/s on each, which
    tells whether generation is bound by compute (it grows with the threads) or by memory
    bandwidth (it does not)."""
    lines = []
    by_server: dict[tuple, dict[int, float]] = {}
    for run in runs:
        if run.get("threads") and run["results"] and run["results"][0]["k"] == 1:
            key = (run["engine"], run.get("speculation") or "none")
            by_server.setdefault(key, {})[run["threads"]] = run["results"][0]["gen_tok_s"]
    for (engine, speculation), speeds in by_server.items():
        if len(speeds) < 2:
            continue
        low, high = min(speeds), max(speeds)
        lines += [f"One request on `{engine}`, speculation `{speculation}`: " + ", ".join(
            f"{speeds[t]:.2f} tok/s on {t} thread(s)" for t in sorted(speeds)) +
            f"; {high} threads give {speeds[high] / speeds[low]:.2f}x of {low} (bound by memory "
            "bandwidth, it would stay near 1x; bound by compute, it grows with the threads).", ""]
    return lines


def make_prompts(run_dir: str) -> None:
    """Writes the prompt set from a run directory: its first generate, improve and fix calls."""
    from codeworld.synthesis import RunDir

    run = RunDir(run_dir)
    calls = run.load_calls()
    chosen, seen = [], set()
    for index in sorted(calls):
        record = calls[index]
        kind = record["request"]["action"]
        if kind not in seen:
            seen.add(kind)
            chosen.append({"id": kind, "call": index, "messages": record["messages"]})
    spec = run.spec
    PROMPTS.write_text(json.dumps({
        "source": f"codeworld synthesize {spec.env_id} --method {spec.method} --llm "
                  f"{spec.llm} --seed {spec.seed}: calls {[c['call'] for c in chosen]}",
        "prompts": chosen}, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {PROMPTS} ({', '.join(c['id'] for c in chosen)})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", default="old,new", help="configurations, the baseline first")
    parser.add_argument("--max-tokens", type=int, default=512, help="longest answer of each call")
    parser.add_argument("--prompts", default=str(PROMPTS))
    parser.add_argument("--parallel", default="1,2,4", help="request counts of part 2")
    parser.add_argument("--parallel-tokens", type=int, default=96, help="tokens per request in part 2")
    parser.add_argument("--parallel-threads", default="",
                        help="thread counts of part 2, e.g. 1,2 (default: the new settings' own)")
    parser.add_argument("--parallel-speculation", default="",
                        help="speculation kinds of part 2, e.g. none,ngram-mod (default: the new "
                             "settings' choice for several slots)")
    parser.add_argument("--parallel-engines", default="",
                        help="engines of part 2 (default: xllamacpp, and native where built)")
    parser.add_argument("--skip-parallel", action="store_true")
    parser.add_argument("--skip-replay", action="store_true")
    parser.add_argument("--out", default=str(OUT), help="output path without suffix")
    parser.add_argument("--make-prompts", metavar="RUN_DIR", default=None)
    parser.add_argument("--markdown-only", action="store_true", help="rewrite OUT.md from OUT.json")
    args = parser.parse_args(argv)
    if args.make_prompts:
        make_prompts(args.make_prompts)
        return 0
    if args.markdown_only:
        out = Path(args.out)
        out.with_suffix(".md").write_text(markdown(json.loads(out.with_suffix(".json").read_text())))
        return 0
    prompts = json.loads(Path(args.prompts).read_text())["prompts"]
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    report = {
        "date": _dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "command": "python benchmarks/llm_speed.py " + shlex.join(sys.argv[1:] if argv is None else argv),
        "machine": machine(),
        "load_start": load1(),
    }
    out = Path(args.out)
    if not args.skip_replay:
        print(f"part 1: {len(prompts)} real prompts x {configs}, max {args.max_tokens} tokens", flush=True)
        report["part1"] = part1(prompts, configs, args.max_tokens)
        for name, s in report["part1"]["summary"].items():
            print(f"  {name:<12} median {s['median_s']:.1f} s/call, "
                  f"prompt {fmt(s['prompt_tok_s'], '.1f')} tok/s, "
                  f"generated {fmt(s['gen_tok_s'], '.1f')} tok/s; speedup {s['speedup_median_s']:.2f}x "
                  f"(prompt {fmt(s['speedup_prompt_tok_s'])}x, generation {fmt(s['speedup_gen_tok_s'])}x)")
        print(f"  identical greedy answers, grouped: {report['part1']['same_answer']}")
    if not args.skip_parallel:
        ks = [int(k) for k in args.parallel.split(",")]
        print(f"part 2: K = {ks} requests at once, {args.parallel_tokens} tokens each", flush=True)
        from codeworld.llm._native import native_server_binary

        engines = ([e.strip() for e in args.parallel_engines.split(",") if e.strip()] or
                   ["xllamacpp"] + (["native"] if native_server_binary() else []))
        threads = [int(t) for t in args.parallel_threads.split(",") if t.strip()] or [None]
        kinds = [k.strip() for k in args.parallel_speculation.split(",") if k.strip()] or [None]
        report["part2"] = [part2(prompts, ks, args.parallel_tokens, engine, n, kind)
                           for engine in engines for n in threads for kind in kinds]
    report["load_end"] = load1()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(report))
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
