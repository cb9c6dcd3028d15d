"""The documentation site builds with warnings as errors, and a broken link would fail it.

`mkdocs build --strict` over the repository's own `mkdocs.yml` (Material, the API pages from
the docstrings, the notebooks as tutorials) into a temporary folder: any warning (a page
outside the nav, a link to a missing page or anchor, a docstring mkdocstrings cannot read)
fails the build. A tiny site with the same `validation:` settings and one broken link, then
one broken anchor, must fail, so the check above can fail. README stays a short front page
whose relative links all land on files of the repository.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
README_MAX_LINES = 150
RESERVED_PAGES = ("fidelity.md", "statistics.md", "audit.md", "providers.md", "warm-kernels.md",
                  "your-own-study.md")


def mkdocs_build(config: Path, site: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=240)


def problems(done: subprocess.CompletedProcess[str]) -> str:
    return "\n".join(line for line in done.stderr.splitlines() if "WARNING" in line or "ERROR" in line)


def test_the_site_builds_strictly_with_every_reserved_page_in_the_nav(tmp_path):
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = yaml.safe_dump(config["nav"])
    assert [page for page in RESERVED_PAGES if page not in nav] == []
    done = mkdocs_build(REPO / "mkdocs.yml", tmp_path / "site", REPO)
    assert done.returncode == 0, problems(done) or done.stderr[-3000:]
    assert "WARNING" not in done.stderr
    site = tmp_path / "site"
    assert "export_inspect" in (site / "api" / "export" / "index.html").read_text(encoding="utf-8")  # from docstrings
    tutorial = (site / "tutorials" / "explore_trajectory" / "index.html").read_text(encoding="utf-8")
    assert "TrajectoryExplorer" in tutorial  # the notebook's code, rendered


@pytest.mark.parametrize(("link", "named"), [("[gone](missing.md)", "missing.md"),
                                             ("[gone](index.md#no-such-heading)", "no-such-heading")])
def test_the_validation_settings_turn_a_broken_link_into_a_failed_build(tmp_path, link, named):
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n## A heading\n\nText.\n", encoding="utf-8")
    (docs / "page.md").write_text(f"# Page\n\nSee [home](index.md#a-heading) and {link}.\n", encoding="utf-8")
    tiny = {"site_name": "tiny", "docs_dir": str(docs), "strict": config["strict"],
            "validation": config["validation"], "nav": ["index.md", "page.md"],
            "markdown_extensions": ["toc"]}
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(tiny), encoding="utf-8")
    done = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site", tmp_path)
    # the build fails, and on the broken link alone (the good link to #a-heading is not named)
    assert done.returncode != 0, done.stderr[-2000:]
    assert named in problems(done) and "a-heading" not in problems(done).replace(named, ""), problems(done)


def test_readme_is_a_short_front_page_whose_links_land():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < README_MAX_LINES
    assert "make demo" in text and "make test" in text and "make docs" in text
    targets = [t for t in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text) if "://" not in t]
    assert targets, "README links into the docs"
    assert [t for t in targets if not (REPO / t).exists()] == []
