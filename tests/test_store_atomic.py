"""Atomic writes: a file's data is synced before its rename, always; a batch syncs its files
together and its folders once each at the end, also when the job fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from colabkit.store import AtomicBatch, atomic_write_text
from colabkit.store import atomic as atomic_module


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


@pytest.fixture
def renamed(monkeypatch, synced) -> list[tuple[str, Path]]:
    """`synced`, with every rename made by the module added as ("rename", target)."""
    real_replace = os.replace

    def on_replace(src, dst) -> None:
        synced.append(("rename", Path(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(atomic_module.os, "replace", on_replace)
    return synced


def _temporaries(folder: Path) -> list[str]:
    return [p for p in os.listdir(folder) if p.endswith(".tmp")]


def test_a_batch_renames_only_synced_data_and_syncs_each_folder_once_at_the_end(tmp_path, renamed):
    folders = [tmp_path / f"s{i}" for i in range(3)]
    for folder in folders:
        folder.mkdir()
    with AtomicBatch() as batch:
        for folder in folders:
            for name in ("x.json", "y.json"):
                batch.write_text(folder / name, f"{folder.name}/{name}")
        batch.sync_folder(tmp_path)
        # Nothing under a final name before the flush: a reader sees the old state.
        assert not [p for f in folders for p in os.listdir(f) if not p.endswith(".tmp")]
        assert not [kind for kind, _ in renamed if kind != "file"]
        batch.flush()
        assert all((f / "y.json").read_text() == f"{f.name}/y.json" for f in folders)
        assert not [kind for kind, _ in renamed if kind == "folder"]  # folders wait for the end
    kinds = [kind for kind, _ in renamed]
    assert kinds.count("file") == kinds.count("rename") == 6
    for kind, target in renamed:  # each file's data was synced before its rename
        if kind == "rename":
            synced_before = [p for k, p in renamed[:renamed.index((kind, target))] if k == "file"]
            assert any(p.parent == target.parent and p.name.startswith(f".{target.name}.") for p in synced_before)
    assert kinds[-4:] == ["folder"] * 4 and sorted(p for k, p in renamed if k == "folder") == [tmp_path, *folders]
    assert not [p for f in folders for p in _temporaries(f)]


def test_a_batch_flushes_every_max_files_writes(tmp_path):
    with AtomicBatch(max_files=2, max_age_s=3600) as batch:
        for name in ("a", "b", "c"):
            batch.write_text(tmp_path / name, name)
        assert (tmp_path / "a").read_text() == "a" and (tmp_path / "b").is_file()
        assert not (tmp_path / "c").exists()
    assert (tmp_path / "c").read_text() == "c"


def test_a_failed_write_keeps_the_others_and_leaves_no_temporary(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing"), AtomicBatch() as batch:
        batch.write_text(tmp_path / "missing" / "a.json", "lost")
        batch.write_text(tmp_path / "b.json", "kept")
    assert (tmp_path / "b.json").read_text() == "kept" and not _temporaries(tmp_path)


def test_a_batch_ended_by_an_error_keeps_and_syncs_what_was_written(tmp_path, synced):
    with pytest.raises(RuntimeError), AtomicBatch() as batch:
        batch.write_text(tmp_path / "a.json", "{}")
        raise RuntimeError("scorer crashed")
    assert (tmp_path / "a.json").read_text() == "{}"
    assert synced[-1] == ("folder", tmp_path)


def test_a_sigterm_during_a_cli_command_leaves_no_temporary_behind(tmp_path):
    """`colabkit` turns SIGTERM into an unwinding exit, so an atomic write's cleanup runs."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import os, signal, time
        from pathlib import Path
        from colabkit.cli import exit_cleanly_on_sigterm
        from colabkit.store import atomic_path
        with exit_cleanly_on_sigterm(), atomic_path(Path({str(tmp_path)!r}) / "scores.parquet") as tmp:
            tmp.write_bytes(b"half")
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 143, done.stderr
    assert list(tmp_path.iterdir()) == []  # neither the target nor a .tmp
