"""Where DiscoveryBench's files are: the data root, its metadata files and its answer keys.

Researchers point the suite at whatever they have: the data folder itself (holding `real/`
and `synth/`, with `eval/` beside them as in `../shared/discoverybench`), a clone of the
upstream repository (`<repo>/discoverybench/real/...` with `<repo>/eval/answer_key_*.csv`),
or a folder inside either (a split or one dataset folder). All of these resolve here to one
`Layout`, so the loader never guesses paths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from colabkit.errors import ColabkitError

SCHEMAS = ("real", "synth")
ANSWER_KEYS = {"real": "answer_key_real.csv", "synth": "answer_key_synth.csv"}
_METADATA = re.compile(r"^metadata_(\d+)\.json$")


def demo_root() -> Path:
    """The shipped demo tasks, laid out like DiscoveryBench (used when no data root is given)."""
    return Path(__file__).resolve().parent / "demo_data"


@dataclass(frozen=True)
class MetadataFile:
    """One `metadata_<k>.json` and the coordinates its path gives it (ids come from the path:
    the `id` inside upstream files is 0 in every archaeology file, so it cannot be trusted)."""

    path: Path
    split: str  # "real/test", "synth/train", ...
    folder: str  # dataset folder name, e.g. "archaeology"
    metadata_id: int

    @property
    def schema(self) -> str:
        return self.split.split("/")[0]

    @property
    def id_prefix(self) -> str:
        return f"{self.folder}/{self.metadata_id}"


@dataclass(frozen=True)
class Layout:
    """A resolved data root: `data_root` holds `real/` and/or `synth/`; `scope` is the folder
    the user actually named (tasks outside it are ignored); `eval_dir` holds the answer keys."""

    data_root: Path
    scope: Path
    eval_dir: Path | None

    def answer_key(self, schema: str) -> Path | None:
        if self.eval_dir is None:
            return None
        path = self.eval_dir / ANSWER_KEYS[schema]
        return path if path.is_file() else None

    def metadata_files(self) -> list[MetadataFile]:
        """Every metadata file under the scope, in a stable order (split, folder, numeric id)."""
        found = []
        for schema in SCHEMAS:
            for path in (self.data_root / schema).glob("*/*/metadata_*.json"):
                match = _METADATA.match(path.name)
                if match is None or not _is_within(path, self.scope):
                    continue
                split = f"{schema}/{path.parent.parent.name}"
                found.append(MetadataFile(path, split, path.parent.name, int(match.group(1))))
        return sorted(found, key=lambda m: (m.split, m.folder, m.metadata_id))


def locate(root: Path | str) -> Layout:
    """Resolve a user-given folder to a Layout, or fail with one line naming the folder."""
    given = Path(root).expanduser()
    if not given.exists():
        raise ColabkitError(f"data root not found: {given} (expected a DiscoveryBench folder)")
    if not given.is_dir():
        raise ColabkitError(f"data root is not a folder: {given} (expected a DiscoveryBench folder)")
    given = given.resolve()
    for candidate in (given, given / "discoverybench"):
        if _is_data_root(candidate):
            return Layout(candidate, candidate, _eval_dir(candidate))
    for ancestor in (given, *given.parents):
        if ancestor.name in SCHEMAS and _is_data_root(ancestor.parent):
            return Layout(ancestor.parent, given, _eval_dir(ancestor.parent))
    raise ColabkitError(
        f"not a DiscoveryBench folder: {given} (expected real/ or synth/ in it, "
        "or discoverybench/real/ as in a clone of the upstream repository, or task folders with a task.yaml)"
    )


def _is_data_root(path: Path) -> bool:
    return any((path / schema).is_dir() for schema in SCHEMAS)


def _eval_dir(data_root: Path) -> Path | None:
    """`eval/` beside `real/` (the shared copy) or beside `discoverybench/` (an upstream clone)."""
    for candidate in (data_root / "eval", data_root.parent / "eval"):
        if any((candidate / name).is_file() for name in ANSWER_KEYS.values()):
            return candidate
    return None


def _is_within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents
