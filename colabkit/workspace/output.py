"""Turn a cell's IOPub messages into the bounded text a model is shown, plus saved figures.

Models read cell output in their next prompt, so it must be short, plain and honest about
what was cut: text past the cap is counted, not kept (a 100 MB print costs no memory here),
and the note says how many characters were dropped.  Figures arrive as base64 PNG
display_data; they are written into the working folder and reported by relative path,
which is what a text-only model can use.  The folder is writable by sandboxed code, so
files are created without following symlinks (a planted link cannot redirect the host's
write elsewhere).
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from pathlib import Path

from colabkit.workspace.boot import DROPPED_MIME

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
MAX_IMAGES_PER_CELL = 20


def strip_ansi(text: str) -> str:
    """Remove terminal colour codes (IPython colours its tracebacks)."""
    return _ANSI.sub("", text)


def clip_middle(text: str, limit: int) -> tuple[str, bool]:
    """Keep the head and the tail of `text` (a traceback's last line matters most)."""
    if len(text) <= limit:
        return text, False
    half = max(limit // 2, 1)
    omitted = len(text) - 2 * half
    return f"{text[:half]}\n[... {omitted:,} characters omitted ...]\n{text[-half:]}", True


class OutputCollector:
    """Accumulates one cell's output up to `limit` characters; saves figures if `image_dir`."""

    def __init__(self, limit: int, *, workdir: Path | None = None, image_stem: str = "cell"):
        self.limit = limit
        self.workdir = workdir
        self.image_stem = image_stem
        self._chunks: list[str] = []
        self._kept = 0
        self.dropped = 0
        self.images: list[str] = []
        self.images_skipped = 0
        self.error: str | None = None
        self.lost = False

    # -- feeding ---------------------------------------------------------------------
    def handle(self, msg: dict) -> None:
        """Consume one IOPub message that belongs to this cell."""
        kind = msg["msg_type"]
        content = msg.get("content", {})
        if kind == "stream":
            self.add_text(content.get("text", ""))
        elif kind in ("execute_result", "display_data", "update_display_data"):
            self._add_data(content.get("data", {}))
        elif kind == "error":
            self.set_error(content)

    def add_text(self, text: str) -> None:
        room = self.limit - self._kept
        if room <= 0:
            self.dropped += len(text)
            return
        kept = text[:room]
        self._chunks.append(kept)
        self._kept += len(kept)
        self.dropped += len(text) - len(kept)

    def set_error(self, content: dict) -> None:
        head = f"{content.get('ename', 'Error')}: {content.get('evalue', '')}"
        trace = strip_ansi("\n".join(content.get("traceback", [])))
        self.error = clip_middle(f"{head}\n{trace}".rstrip(), self.limit)[0]

    def _add_data(self, data: dict) -> None:
        if DROPPED_MIME in data:
            chars = data[DROPPED_MIME].get("chars", 0) if isinstance(data[DROPPED_MIME], dict) else 0
            self.dropped += int(chars) if isinstance(chars, int) and chars > 0 else 0
        elif "image/png" in data:
            path = self._save_png(data["image/png"])
            self.add_text(f"[figure saved: {path}]\n" if path else "[figure not saved]\n")
        elif "text/plain" in data:
            text = data["text/plain"]
            self.add_text(text if text.endswith("\n") else text + "\n")

    def _save_png(self, b64: object) -> str | None:
        if self.workdir is None or not isinstance(b64, str):
            return None
        if len(self.images) >= MAX_IMAGES_PER_CELL:
            self.images_skipped += 1
            return None
        try:
            raw = base64.b64decode(b64, validate=False)
        except (binascii.Error, ValueError):
            return None
        name = f"{self.image_stem}-{len(self.images) + 1}.png"
        if not write_no_follow(self.workdir, "figures", name, raw):
            return None
        rel = f"figures/{name}"
        self.images.append(rel)
        return rel

    # -- results ---------------------------------------------------------------------
    @property
    def truncated(self) -> bool:
        return self.dropped > 0 or self.images_skipped > 0 or self.lost

    @property
    def text(self) -> str:
        out = "".join(self._chunks)
        notes = []
        if self.dropped:
            notes.append(f"[output truncated: {self.dropped:,} more characters were dropped "
                         f"(limit {self.limit:,})]")
        if self.images_skipped:
            notes.append(f"[{self.images_skipped} more figures were not saved "
                         f"(limit {MAX_IMAGES_PER_CELL} per cell)]")
        if self.lost:
            notes.append("[some output was lost: a message exceeded the size limit]")
        if notes:
            out = (out + ("\n" if out and not out.endswith("\n") else "")) + "\n".join(notes)
        return out


class DiscardingCollector(OutputCollector):
    """For replayed cells: outputs are thrown away and no figure files are written."""

    def __init__(self) -> None:
        super().__init__(0)

    def handle(self, msg: dict) -> None:
        if msg["msg_type"] == "error":
            self.set_error(msg.get("content", {}))


def write_no_follow(workdir: Path, subdir: str, name: str, data: bytes) -> bool:
    """Create workdir/subdir/name without following any symlink the kernel may have planted."""
    flags_dir = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        top = os.open(workdir, flags_dir)
    except OSError:
        return False
    try:
        try:
            os.mkdir(subdir, 0o755, dir_fd=top)
        except FileExistsError:
            pass
        sub = os.open(subdir, flags_dir, dir_fd=top)
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=sub)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        finally:
            os.close(sub)
    except OSError:
        return False
    finally:
        os.close(top)
    return True
