"""Which symbolic-regression library recovers the state components that the data section's sparse
linear fits miss, on the shipped CWMB buffers (the measurement behind `codeworld.fitting._regression`).

For each environment, the run's split (seed 0, the share every run holds out) gives training and
held-out episodes. The data section's fits (`codeworld.worlds.cwmb._relations.find_relations`) are
made on the training episodes; every real component they do not get right on every training
transition is then regressed by each library on the same inputs (the old state, the action, and
the new values of the components the fits get right everywhere), in the integrator form (the
component's change), within the same wall-clock budget, and scored on the held-out episodes: the
share of transitions right within the sound scorer's state tolerance, and the skill
``1 - MSE / MSE(unchanged)``. ``pyoperon`` is codeworld's own path (`regress_component`: Operon's
front refitted in float64, kept only where held-out error falls, else the linear fit stands);
``pysindy`` (polynomial and Fourier dictionary, STLSQ, its threshold chosen on held-out training
episodes) and ``gplearn`` (its generations run until the budget) are measured where installed.

    python benchmarks/regression_libraries.py [--envs ENV,ENV,...] [--budget S] [--out STEM]
                                               [--rows EARLIER.jsonl]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ENVS = ("CartPole-v1", "Acrobot-v1", "Pendulum-v1", "MountainCar-v0", "InvertedPendulum-v4",
        "Reacher-v4", "Swimmer-v4")


def _pysindy(x, y, x_held, groups, budget):
    import pysindy as ps

    from codeworld.fitting import heldout_rows

    lib = ps.PolynomialLibrary(degree=3 if x.shape[1] <= 6 else 2) + ps.FourierLibrary(
        n_frequencies=1)
    lib.fit(x)
    theta, theta_held = np.asarray(lib.transform(x)), np.asarray(lib.transform(x_held))
    check = heldout_rows(groups, 0.3)
    best = None
    for threshold in (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6):
        opt = ps.STLSQ(threshold=threshold, alpha=1e-8, max_iter=50, normalize_columns=True)
        opt.fit(theta[~check], y[~check].reshape(-1, 1))
        error = float(np.mean((theta[check] @ opt.coef_.ravel() - y[check]) ** 2))
        if best is None or error < best[0]:
            best = (error, threshold)
    opt = ps.STLSQ(threshold=best[1], alpha=1e-8, max_iter=50, normalize_columns=True)
    opt.fit(theta, y.reshape(-1, 1))
    coef = opt.coef_.ravel()
    return theta_held @ coef, int((coef != 0).sum())


def _gplearn(x, y, x_held, groups, budget):
    from gplearn.genetic import SymbolicRegressor

    started, generations = time.perf_counter(), 1
    search = SymbolicRegressor(population_size=1000, generations=1, warm_start=True,
                               function_set=("add", "sub", "mul", "div", "sin", "cos"),
                               random_state=0, parsimony_coefficient=1e-4)
    while True:
        search.set_params(generations=generations)
        search.fit(x, y)
        generations += 1
        if time.perf_counter() - started > budget or generations > 500:
            break
    return search.predict(x_held), int(search._program.length_)


def measure(env_id: str, budget: float) -> list[dict]:
    from codeworld.envs._buffers import HELDOUT_FRACTION, EpisodeSplit
    from codeworld.fitting import regress_component
    from codeworld.kernels._check import values_close
    from codeworld.scoring import Scorer
    from codeworld.scoring._scorer import tolerances
    from codeworld.worlds.cwmb._relations import find_relations

    whole = Scorer(env_id, None, references=False)
    train, held = EpisodeSplit.draw(whole.buffer, HELDOUT_FRACTION, 0).parts(whole.buffer)
    spec, tol = whole.spec, tolerances(whole.spec, "sound")
    atol, rtol = tol.state_atol, tol.state_rtol
    if atol == 0 and rtol == 0:
        return []  # whole-number states: decision lists, not regression
    d = train.obs.shape[1]
    names = [f"s{j}" for j in range(d)]
    live = ~np.asarray(train.terminated, dtype=bool)
    fits = {r.index: r for r in find_relations(
        train.obs, train.actions, train.next_obs, names, discrete=spec.discrete,
        n_actions=spec.n_actions, atol=atol, rtol=rtol, mask=live, angles=True)}
    known = [j for j in range(d) if j in fits and fits[j].exact >= 1.0]

    def table(buf):
        a = np.asarray(buf.actions, dtype=np.float64).reshape(len(buf.obs), -1)
        return np.column_stack([buf.obs, a, buf.next_obs[:, known]])

    labels = names + ([f"a{k}" for k in range(table(train).shape[1] - d - len(known))])
    labels += [f"new_{names[j]}" for j in known]
    x, x_held = table(train)[live], table(held)

    def formula_values(formula, names, obs, actions, next_obs):
        """A data-section formula (codeworld's own fit) on every row; a discrete action is the
        int that indexes its per-action tuple."""
        import math

        out = np.empty(len(obs))
        for k in range(len(obs)):
            scope = {"math": math, "np": np, "action": int(np.asarray(actions[k]).reshape(-1)[0])
                     if spec.discrete else np.asarray(actions[k], dtype=np.float64)}
            scope.update(zip(names, map(float, obs[k])))
            scope.update((f"new_{name}", float(v)) for name, v in zip(names, next_obs[k]))
            out[k] = float(eval(formula, scope))  # noqa: S307 - a fitted formula of our own
        return out

    rows = []
    for i in range(d):
        change = train.next_obs[live, i] - train.obs[live, i]
        if i in known or np.ptp(change) == 0:
            continue
        truth = held.next_obs[:, i]
        unchanged = float(np.mean((truth - held.obs[:, i]) ** 2))
        row = {"env": env_id, "component": i,
               "linear_train_right": round(fits[i].exact, 3) if i in fits else None}
        baseline = train.obs[live, i]  # the linear fit's predictions where it has one
        if i in fits:
            linear = formula_values(fits[i].formula, names, held.obs, held.actions,
                                    held.next_obs)
            row["linear"] = {"heldout_right": round(float(np.mean(values_close(
                linear, truth, atol, rtol))), 3), "heldout_skill": round(
                1.0 - float(np.mean((linear - truth) ** 2)) / unchanged, 4) if unchanged else None}
            baseline = formula_values(fits[i].formula, names, train.obs[live],
                                      train.actions[live], train.next_obs[live])
        libraries = {"pyoperon": None, "pysindy": _pysindy, "gplearn": _gplearn}
        for library, adapter in libraries.items():
            started = time.perf_counter()
            try:
                if adapter is None:
                    found = regress_component(x, labels, train.next_obs[live, i], atol=atol,
                                              rtol=rtol, base=i, budget_s=budget, seed=0,
                                              groups=train.episode_start[live],
                                              baseline=baseline)
                    if found is None:
                        row[library] = {"kept": False, "s": round(time.perf_counter() - started, 1)}
                        continue
                    pred, size = found.predict(x_held, labels), found.source.count("*") + 1
                else:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        change_held, size = adapter(x, change, x_held, train.episode_start[live],
                                                    budget)
                    pred = held.obs[:, i] + change_held
            except ImportError:
                row[library] = {"missing": True}
                continue
            except (ValueError, np.linalg.LinAlgError) as error:  # a library that fails here
                row[library] = {"error": f"{type(error).__name__}: {error}"[:200]}
                continue
            right = float(np.mean(values_close(pred, truth, atol, rtol)))
            skill = 1.0 - float(np.mean((pred - truth) ** 2)) / unchanged if unchanged else None
            row[library] = {"heldout_right": round(right, 3),
                            "heldout_skill": None if skill is None else round(skill, 4),
                            "size": size, "s": round(time.perf_counter() - started, 1)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def _cell(result: dict | None) -> str:
    if not result or result.get("missing"):
        return "-"
    if result.get("error"):
        return "failed"
    if result.get("kept") is False:
        return f"not kept ({result['s']:.0f} s)"
    skill = result["heldout_skill"]
    return (f"{result['heldout_right']:.3f} / {'-' if skill is None else f'{skill:.4f}'} "
            f"({result['s']:.0f} s)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default=",".join(ENVS))
    parser.add_argument("--budget", type=float, default=10.0, help="seconds per component")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "regression_libraries"))
    parser.add_argument("--rows", help="rows printed by an earlier run (JSON lines), kept and "
                        "their environments not measured again")
    args = parser.parse_args(argv)
    import os
    import tempfile

    # a fresh user cache: every answer is searched here, and its time is this run's
    os.environ["CODEWORLD_CACHE_DIR"] = tempfile.mkdtemp(prefix="regression-bench-")
    started = time.time()
    rows = ([] if not args.rows else [json.loads(line) for line in
                                      Path(args.rows).read_text().splitlines() if line.startswith("{")])
    done = {row["env"] for row in rows}
    rows += [row for env in args.envs.split(",") if env not in done
             for row in measure(env, args.budget)]
    import subprocess

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                            capture_output=True).stdout.strip()
    data = {"commit": commit, "budget_s": args.budget, "machine": platform.machine(),
            "python": sys.version.split()[0], "minutes": round((time.time() - started) / 60, 1),
            "rows": rows}
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n")
    lines = [f"# Symbolic regression libraries on the shipped buffers ({commit}, "
             f"{args.budget:g} s per component)", "",
             "Held-out episodes of the run's split (seed 0): share of transitions right within "
             "the sound state tolerance / skill `1 - MSE/MSE(unchanged)` (wall seconds). "
             "Components the linear fits get right on every training transition are left out. "
             "The linear fit: as the data section states it (its share right on training in "
             "brackets). `not kept`: codeworld's regression found nothing that beats the linear "
             "fit on the held-out episodes of its training split, so the linear fit stands.", "",
             "| env | component | linear fit (training share) | pyoperon (codeworld) | pysindy | gplearn |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        linear = ("-" if row["linear_train_right"] is None else
                  f"{_cell({**row['linear'], 's': 0})[:-6]} ({row['linear_train_right']:.3f})")
        lines.append(f"| {row['env']} | {row['component']} | {linear} | {_cell(row.get('pyoperon'))} "
                     f"| {_cell(row.get('pysindy'))} | {_cell(row.get('gplearn'))} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
