"""Atomic writes: a file's data is synced before its rename, always; the folder syncs can be
deferred to the end of a job (once per folder), also when the job fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from colabkit.store import atomic as atomic_module
from colabkit.store import atomic_write_text, deferred_folder_syncs


@pytest.fixture
def synced(monkeypatch) -> list[tuple[str, Path]]:
    """Every fsync, in order, as ("file", path) or ("folder", path)."""
    calls: list[tuple[str, Path]] = []
    real_file, real_dir = atomic_module.fsync_file, atomic_module.fsync_dir

    def on_file(path: Path) -> None:
        calls.append(("file", Path(path)))
        real_file(path)

    def on_dir(folder: Path) -> None:
        calls.append(("folder", Path(folder)))
        real_dir(folder)

    monkeypatch.setattr(atomic_module, "fsync_file", on_file)
    monkeypatch.setattr(atomic_module, "fsync_dir", on_dir)
    return calls


def test_a_write_syncs_its_data_then_its_folder(tmp_path, synced):
    atomic_write_text(tmp_path / "a.json", "{}")
    assert [kind for kind, _ in synced] == ["file", "folder"]
    assert synced[1][1] == tmp_path and (tmp_path / "a.json").read_text() == "{}"


def test_deferred_folder_syncs_run_once_per_folder_at_the_end(tmp_path, synced):
    folders = [tmp_path / f"s{i}" for i in range(3)]
    for folder in folders:
        folder.mkdir()
    with deferred_folder_syncs():
        for folder in folders:
            for name in ("x.json", "y.json"):
                atomic_write_text(folder / name, name)
        with deferred_folder_syncs():  # nested: the outer block syncs
            atomic_write_text(folders[0] / "z.json", "z")
        # Every file is complete and in place before any folder sync, each synced before its rename.
        assert [kind for kind, _ in synced] == ["file"] * 7
        assert all((f / "x.json").read_text() == "x.json" for f in folders)
        assert not [p for f in folders for p in os.listdir(f) if p.endswith(".tmp")]
    assert sorted(p for kind, p in synced if kind == "folder") == folders


def test_deferred_folders_are_synced_when_the_job_fails(tmp_path, synced):
    with pytest.raises(RuntimeError), deferred_folder_syncs():
        atomic_write_text(tmp_path / "a.json", "{}")
        raise RuntimeError("scorer crashed")
    assert synced[-1] == ("folder", tmp_path)
    atomic_write_text(tmp_path / "b.json", "{}")  # outside the block: immediate again
    assert synced[-2:] == [("file", synced[-2][1]), ("folder", tmp_path)]
