"""The report pages in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``) driven by selenium.

A run made with the scripted LLM (`codeworld synthesize`, then `codeworld show`) and a small CWMB
grid (`benchmarks/cwmb.py`) are rendered; the tests check what a user looks at: the page loads
with no console error, the plot has one point per LLM call, the tree one node per program, and a
click on a node shows that node's program. ``CODEWORLD_SCREENSHOTS=DIR`` saves a screenshot of
each page there.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest

from codeworld.cli import main

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "tests" / "models" / "cartpole_functional.py"
LEGACY_RUN = ROOT / "tests" / "data" / "legacy_runs" / "synthesize-cartpole"
RTFM_MODEL = (ROOT / "tests" / "test_rtfm.py").read_text(encoding="utf-8").split("MODEL = '''")[1].split("'''")[0]

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)
DRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None or DRIVER is None:
        pytest.skip("no headless browser: install Debian's chromium and chromium-driver "
                    "(apt-get install chromium chromium-driver; .ci/run does)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium (the dev extra) is missing")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,1600"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


def open_page(driver, page: Path) -> list[dict]:
    """Load a page; return the console messages of level SEVERE (errors)."""
    driver.get_log("browser")  # drop what an earlier page left
    driver.get(page.resolve().as_uri())
    return [m for m in driver.get_log("browser") if m["level"] == "SEVERE"]


def screenshot(driver, name: str) -> None:
    folder = os.environ.get("CODEWORLD_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1280, min(int(height) + 40, 2400))
        driver.save_screenshot(str(Path(folder) / name))
        driver.set_window_size(1280, 1600)


def scripted(path: Path, texts: list[str]) -> str:
    path.write_text(json.dumps([f"Here it is:\n```python\n{t}```\n" for t in texts]))
    return f"scripted:{path}"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    good = MODEL.read_text()
    programs = [good.replace("return", "return undefined_name +", 1),  # buggy, then fixed
                good.replace("0.02", "0.03"),
                good.replace("10.0", "11.0").replace("import numpy as np\n", ""),  # repaired
                good]
    out = tmp / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CODEWORLD_CACHE_DIR", str(tmp / "cache"))
        assert main(["synthesize", "CartPole-v1", "--llm", scripted(tmp / "s.json", programs),
                     "--budget", "4", "--out", str(out), "--no-fit", "--no-speed-step"]) == 0
    return out


def test_run_page_shows_every_call_and_each_program_on_click(browser, run_dir, capsys):
    from selenium.webdriver.common.by import By

    assert main(["show", str(run_dir)]) == 0
    assert f"report: {run_dir / 'report.html'}" in capsys.readouterr().out
    errors = open_page(browser, run_dir / "report.html")
    assert errors == []
    calls = len(list((run_dir / "calls").glob("*.json")))
    programs = sorted((run_dir / "programs").glob("*.json"))
    assert calls == len(programs) >= 2
    assert len(browser.find_elements(By.CSS_SELECTOR, "circle.pt-train")) == calls
    held = [json.loads(p.read_text())["report"].get("heldout") for p in programs]
    if any(held):  # a run with a held-out split draws its curve too
        assert len(browser.find_elements(By.CSS_SELECTOR, "circle.pt-heldout")) >= 1
    assert len(browser.find_elements(By.CSS_SELECTOR, "#tree g.node")) == len(programs)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#tree g.node.buggy")) == sum(
        json.loads(p.read_text())["buggy"] for p in programs)
    assert not browser.find_element(By.ID, "details").is_displayed()
    for number in (1, len(programs)):
        browser.find_element(By.CSS_SELECTOR, f"#tree g.node[data-call='{number}']").click()
        shown = browser.find_element(By.ID, "detail-program").text
        written = (run_dir / "programs" / f"{number - 1:04d}.py").read_text()
        assert shown.strip() == written.strip()
        assert browser.find_element(By.ID, "detail-title").text.startswith(f"call {number}:")
        answer = browser.find_element(By.ID, "detail-answer").text
        assert "Here it is:" in answer  # the LLM's answer, as it came
    # the mechanical repair of call 3 (the missing import), listed and shown with its call
    repaired = sorted(int(p.stem) + 1 for p in (run_dir / "repairs").glob("*.json"))
    assert repaired and all(browser.find_elements(By.CSS_SELECTOR, f"#repairs a[data-call='{n}']")
                            for n in repaired)
    browser.find_element(By.CSS_SELECTOR, f"#repairs a[data-call='{repaired[0]}']").click()
    assert "mechanical repairs:" in browser.find_element(By.ID, "detail-extra").text
    best = browser.find_element(By.ID, "best-program").text
    assert best.strip() == (run_dir / "best_model.py").read_text().strip()
    screenshot(browser, "report-run.png")


def test_a_legacy_run_gets_a_page_with_its_planning_returns(browser, tmp_path, capsys):
    run = tmp_path / "legacy"
    shutil.copytree(LEGACY_RUN, run)
    returns = {"return_random": 21.0, "return_oracle": 200.0, "return_model": 110.5}
    norm = (returns["return_model"] - returns["return_random"]) / (
        returns["return_oracle"] - returns["return_random"])
    (run / "demo.json").write_text(json.dumps({"planning": {**returns, "episodes": 10,
                                                            "normalized_return": norm}}))
    assert main(["show", str(run)]) == 0
    assert open_page(browser, run / "report.html") == []
    from selenium.webdriver.common.by import By

    # the planning returns a demo recorded: a bar for random, oracle and model
    assert len(browser.find_elements(By.CSS_SELECTOR, "#planning rect.bar")) == 3
    assert f"normalized return {norm:.4f}" in browser.find_element(By.TAG_NAME, "body").text

    assert len(browser.find_elements(By.CSS_SELECTOR, "circle.pt-train")) == 2
    assert len(browser.find_elements(By.CSS_SELECTOR, "#tree g.node")) == 2
    assert browser.find_elements(By.CSS_SELECTOR, "circle.pt-heldout") == []  # none recorded
    # the mispredicted transition beside the truth, its wrong components marked
    assert browser.find_elements(By.CSS_SELECTOR, "table.transition tr.wrong")


def _harness():
    spec = importlib.util.spec_from_file_location("cwmb_harness_page", ROOT / "benchmarks" / "cwmb.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_grid_page_has_the_table_a_curve_per_env_and_links_to_each_run(browser, tmp_path, capsys,
                                                                      monkeypatch):
    from selenium.webdriver.common.by import By

    monkeypatch.setenv("CODEWORLD_CACHE_DIR", str(tmp_path / "cache"))
    script = tmp_path / "script.jsonl"
    answer = {"text": "The model:\n```python\n" + RTFM_MODEL + "```\n"}
    script.write_text("\n".join(json.dumps(answer) for _ in range(4)) + "\n")
    out, work = tmp_path / "out", tmp_path / "work"
    assert _harness().main(["--envs", "rtfm", "--methods", "gif-mcts,worldcoder", "--llm",
                            f"scripted:{script}", "--budget", "2", "--no-plan", "--out", str(out),
                            "--workdir", str(work)]) == 0
    capsys.readouterr()
    assert open_page(browser, out / "report.html") == []
    rows = browser.find_elements(By.CSS_SELECTOR, "#grid-table tr")
    assert any("RTFM-v0" in r.text and "gif-mcts" in r.text for r in rows)
    plots = browser.find_elements(By.CSS_SELECTOR, ".env-plot")
    assert [p.get_attribute("data-env") for p in plots] == ["RTFM-v0"]
    table = json.loads((out / "table.json").read_text())
    points = sum(len(table["per_env"][m]["RTFM-v0"]["best_by_call"]) for m in ("gif-mcts", "worldcoder"))
    assert len(plots[0].find_elements(By.CSS_SELECTOR, "circle.pt")) == points
    links = browser.find_elements(By.CSS_SELECTOR, "a.run-link")
    assert len(links) == 2  # one per job
    screenshot(browser, "report-grid.png")
    links[0].click()  # each link opens that run's page, which loads cleanly
    assert browser.find_elements(By.CSS_SELECTOR, "#tree g.node")
    assert [m for m in browser.get_log("browser") if m["level"] == "SEVERE"] == []


def test_open_hands_the_page_to_the_browser(tmp_path, monkeypatch, capsys):
    run = tmp_path / "legacy"
    shutil.copytree(LEGACY_RUN, run)
    opened = []
    monkeypatch.setattr("webbrowser.open", lambda url, *a, **k: opened.append(url) or True)
    page = tmp_path / "elsewhere.html"
    assert main(["show", str(run), "--html", str(page), "--open"]) == 0
    assert opened == [page.resolve().as_uri()] and page.is_file()
    assert not (run / "report.html").exists()


@pytest.mark.parametrize("name", ["demo", "cwmb_job", "apps_job", "agent_rewrite"])
def test_every_earlier_writers_run_directory_gets_a_page(name, browser, tmp_path, capsys):
    from selenium.webdriver.common.by import By

    run = tmp_path / name
    run.mkdir()
    shutil.copy(LEGACY_RUN.parent / f"{name}.run.json", run / "run.json")
    assert main(["show", str(run)]) == 0
    assert open_page(browser, run / "report.html") == []
    assert browser.find_element(By.TAG_NAME, "h1").text  # the run's method and env
    assert browser.find_elements(By.CSS_SELECTOR, "#tree g.node") == []  # no program yet
