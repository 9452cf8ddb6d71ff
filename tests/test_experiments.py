"""The experiment executor and results store: skip of finished jobs, failures, atomic writes."""

from __future__ import annotations

import json
import os

import pytest

from codeworld.experiments import (
    FAILED, FINISHED, Job, LocalExecutor, RayExecutor, ResultsStore, grid, run_grid, split_method,
)
from codeworld.experiments._fakes import calls_of, fake_job


def _grid() -> list[Job]:
    return [
        Job("CartPole-v1", "gif-mcts", 0, "scripted", 3, {"score": 0.5}),
        Job("CartPole-v1", "gif-mcts", 1, "scripted", 3, {"fail": "boom"}),
        Job("Taxi-v4", "worldcoder", 0, "scripted", 3, {"exit": 3}),
        Job("Taxi-v4", "worldcoder", 1, "scripted", 3, {"sleep": 0.2, "score": 0.25}),
    ]


def _check_first_run(summary, store: ResultsStore, jobs: list[Job]) -> None:
    ok, failing, crashing, slow = jobs
    assert sorted(summary.finished) == sorted([ok.key, slow.key])
    assert sorted(summary.failed) == sorted([failing.key, crashing.key])
    assert summary.skipped == []
    assert store.load(ok)["status"] == FINISHED and store.load(ok)["result"]["score"] == 0.5
    assert store.load(slow)["result"]["score"] == 0.25
    failed = store.load(failing)
    assert failed["status"] == FAILED and failed["result"] is None
    assert failed["error"] == "RuntimeError: boom" and "fake_job" in failed["traceback"]
    assert store.load(crashing)["status"] == FAILED
    assert [r["key"] for r in summary.records] == [j.key for j in jobs]


def _check_rerun(summary, workdir, jobs: list[Job]) -> None:
    ok, failing, crashing, slow = jobs
    assert sorted(summary.skipped) == sorted([ok.key, slow.key])
    assert sorted(summary.failed) == sorted([failing.key, crashing.key])
    assert calls_of(workdir, ok) == calls_of(workdir, slow) == 1  # finished jobs are not rerun
    assert calls_of(workdir, failing) == 2  # failed ones are tried again


def test_job_key_is_stable_and_covers_every_field():
    job = Job("CartPole-v1", "gif-mcts/no-fix", 2, "openai:gpt-4o", 5, {"episodes": 3})
    assert job.key == Job.from_json(json.loads(json.dumps(job.to_json()))).key
    assert job.key.startswith("CartPole-v1__gif-mcts-no-fix__seed2__openai_gpt-4o__budget5__")
    others = [Job("CartPole-v1", "gif-mcts/no-fix", 2, "openai:gpt-4o", 5, {"episodes": 4}),
              Job("CartPole-v1", "gif-mcts/no-fix", 3, "openai:gpt-4o", 5, {"episodes": 3}),
              Job("CartPole-v1", "gif-mcts", 2, "openai:gpt-4o", 5, {"episodes": 3})]
    assert len({job.key} | {o.key for o in others}) == 4
    assert "/" not in job.key and ":" not in job.key


def test_grid_and_method_variants():
    jobs = grid(["CartPole-v1", "Taxi-v4"], ["gif-mcts", "worldcoder"], [0, 1], llm="local", budget=5)
    assert len(jobs) == 8 and len({j.key for j in jobs}) == 8
    assert split_method("gif-mcts/no-improve") == ("gif-mcts", {"allow_improve": False})
    assert split_method("gif-mcts/no-relations") == ("gif-mcts", {"assist.relations": False})
    assert split_method("worldcoder") == ("worldcoder", {})
    with pytest.raises(KeyError, match="unknown method variant"):
        split_method("gif-mcts/no-thinking")


def test_local_pool_records_failures_without_stopping_and_skips_finished_jobs(tmp_path):
    jobs = _grid()
    store = ResultsStore(tmp_path / "results")
    workdir = tmp_path / "work"
    seen = []
    summary = run_grid(jobs, fake_job, store, executor=LocalExecutor(max_workers=2), workdir=workdir,
                       progress=lambda job, record: seen.append(job.key))
    _check_first_run(summary, store, jobs)
    assert sorted(seen) == sorted(j.key for j in jobs)
    crashed = store.load(jobs[2])
    assert crashed["error"].startswith("WorkerDied") and "exit code 3" in crashed["error"]
    # jobs ran in processes of their own
    pids = {store.load(j)["result"]["pid"] for j in (jobs[0], jobs[3])}
    assert os.getpid() not in pids and len(pids) == 2

    again = run_grid(jobs + [jobs[0]], fake_job, store, executor=LocalExecutor(max_workers=2),
                     workdir=workdir)
    _check_rerun(again, workdir, jobs)


def test_store_writes_are_atomic(tmp_path, monkeypatch):
    store = ResultsStore(tmp_path)
    job = Job("CartPole-v1", "gif-mcts", 0, "scripted", 3)
    first = {"job": job.to_json(), "status": FINISHED, "result": {"score": 0.5}}
    path = store.write(first)
    assert json.loads(path.read_text())["result"] == {"score": 0.5}

    def broken_replace(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk gone"):
        store.write({"job": job.to_json(), "status": FINISHED, "result": {"score": 0.9}})
    monkeypatch.undo()
    # the old record is intact, and no temporary file is left behind or read as a record
    assert store.load(job)["result"] == {"score": 0.5}
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
    assert len(list(store.records())) == 1
    # a record for another job under this key is refused
    other = Job("Taxi-v4", "gif-mcts", 0, "scripted", 3)
    with pytest.raises(ValueError, match="does not match"):
        store.write({"key": job.key, "job": other.to_json(), "status": FINISHED, "result": {}})


def test_unreadable_record_counts_as_not_finished(tmp_path):
    store = ResultsStore(tmp_path)
    job = Job("CartPole-v1", "gif-mcts", 0, "scripted", 3)
    store.path(job).write_text('{"status": "fini')
    assert store.load(job) is None and not store.is_finished(job)


@pytest.fixture(scope="module")
def local_ray_cluster():
    import ray  # in the dev extra: a missing ray fails here rather than skipping the Ray test
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def test_ray_executor_on_a_local_cluster(local_ray_cluster, tmp_path):
    jobs = _grid()
    store = ResultsStore(tmp_path / "results")
    workdir = tmp_path / "work"
    executor = RayExecutor()
    summary = run_grid(jobs, fake_job, store, executor=executor, workdir=workdir)
    _check_first_run(summary, store, jobs)
    assert local_ray_cluster.is_initialized()  # the executor used the cluster it found
    again = run_grid(jobs, fake_job, store, executor=executor, workdir=workdir)
    _check_rerun(again, workdir, jobs)


def test_a_stored_record_reads_back_as_a_typed_job_record(tmp_path):
    from codeworld.experiments import JobRecord, execute_job, failure_record

    store = ResultsStore(tmp_path)
    job = Job("CartPole-v1", "gif-mcts", 0, "scripted", 3)
    store.write(execute_job(lambda job, workdir: {"score": 1.0}, job, str(tmp_path)))
    assert list(store.load(job)) == ["key", "job", "host", "pid", "status", "result", "error", "traceback",
                                     "seconds", "finished_at"]
    record = JobRecord.from_json(store.load(job))
    assert record.finished and record.result == {"score": 1.0} and record.key == job.key
    assert Job.from_json(record.job) == job and record.error is None and record.seconds >= 0
    failed = JobRecord.from_json(failure_record(job, "ValueError: no", "Traceback ..."))
    assert not failed.finished and failed.result is None and failed.error == "ValueError: no"
    assert JobRecord.from_json(failed.to_json()) == failed
