"""The README and the documentation site: a short README whose links work, and a site that
builds with ``mkdocs build --strict`` (no broken link, no page left out of the navigation, no
docstring the API pages cannot read)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def test_readme_is_short_and_its_links_and_picture_exist():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    assert "make demo    #" in text and "make test    #" in text
    assert "\n## Results\n" in text and "arXiv 2405.15383" in text
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if "://" not in t]
    assert any(t.endswith(".png") for t in local)
    missing = [t for t in local if not (ROOT / t).exists()]
    assert missing == []


def test_every_measured_grid_has_its_account_in_the_docs():
    results = ROOT / "benchmarks" / "results"
    mkdocs = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for table in sorted(results.glob("*/table.md")):
        name = table.parent.name
        assert (table.parent / "README.md").is_file(), name
        page = ROOT / "docs" / "results" / f"{name}.md"
        assert f'benchmarks/results/{name}/README.md' in page.read_text(encoding="utf-8")
        assert f"results/{name}.md" in mkdocs


def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is in the docs and dev extras")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is in the docs and dev extras")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert 'id="codeworld.scoring.Scorer"' in api and 'id="codeworld.synthesis.synthesize"' in api
    # every name docs/api.md lists is rendered (test_architecture: the list is every public name)
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    for target, options in re.findall(r"^::: ([\w.]+)\n((?:[ \t]+.*\n?)*)", page, re.M):
        listed = re.search(r"members:\s*\[([^\]]*)\]", options)
        for anchor in [f"{target}.{name}" for name in re.findall(r"\w+", listed.group(1))] if listed else [target]:
            assert f'id="{anchor}"' in api, anchor
    for readme in (ROOT / "benchmarks" / "results").glob("*/README.md"):  # included whole
        page = tmp_path / "site" / "results" / readme.parent.name / "index.html"
        last_row = [line for line in readme.read_text(encoding="utf-8").splitlines()
                    if line.startswith("|")][-1:]
        for cell in (c.strip() for row in last_row for c in row.split("|")):
            if re.fullmatch(r"-?\d+\.\d+", cell):
                assert cell in page.read_text(encoding="utf-8"), (readme, cell)
