"""No file of the repository names an absolute path of one machine (its data, its home, its
checkout): the suite must run from any clone, and tests find data only through the resolver
in tests/helpers/env.py."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# /work/..., /root, /home/..., /Users/...; not /workspace (the sandbox's own mount), nor a
# path inside a formatted one (/proc/{pid}/root: a process's root, not a machine's folder).
MACHINE_PATH = re.compile(r"(?<![\w.~}-])/(work|root|home|Users)(?=[/\"'`\s)]|$)")
THIS_FILE = Path(__file__).resolve()  # its examples name such paths on purpose


def repository_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=False)
    if listed.returncode == 0 and listed.stdout:
        return [REPO / name for name in listed.stdout.decode().split("\0") if name]
    skip = {".git", ".venv", "results", "__pycache__"}
    return [p for p in REPO.rglob("*") if p.is_file() and not skip & set(p.relative_to(REPO).parts)]


def test_the_path_pattern_catches_machine_paths_and_spares_the_sandbox():
    assert MACHINE_PATH.search('ROOT = Path("/work/shared/discoverybench")')
    assert MACHINE_PATH.search("HOME=/root ") and MACHINE_PATH.search("see /home/alice/data.csv")
    assert not MACHINE_PATH.search('SANDBOX_WORKDIR = "/workspace"')
    assert not MACHINE_PATH.search("../shared/discoverybench or /no/such/root")
    assert not MACHINE_PATH.search('os.open(f"/proc/{holder_pid}/root", os.O_RDONLY)')


def test_no_repository_file_names_an_absolute_machine_path():
    found = []
    for path in repository_files():
        if not path.is_file() or path.resolve() == THIS_FILE:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # figures and other binary files
        found += [f"{path.relative_to(REPO)}:{n}: {line.strip()[:100]}"
                  for n, line in enumerate(text.splitlines(), 1) if MACHINE_PATH.search(line)]
    assert not found, "absolute machine paths:\n" + "\n".join(found)
