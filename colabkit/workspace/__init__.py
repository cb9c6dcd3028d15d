"""The shared workspace: a sandboxed stateful Jupyter kernel over the task's data, a team
chat and a result editor (see `workspace.Workspace`).

This layer sits below team/session/store and imports none of them.
"""

from colabkit.workspace.chat import Chat, Message
from colabkit.workspace.editor import Editor, EditorVersion
from colabkit.workspace.isolation import IsolationReport, Limits
from colabkit.workspace.quota import release_mounts
from colabkit.workspace.workspace import (
                                          CellResult,
                                          FileRecord,
                                          KernelUnavailable,
                                          Workspace,
                                          WorkspaceEvent,
                                          WorkspaceSnapshot,
)

__all__ = [
    "CellResult", "Chat", "Editor", "EditorVersion", "FileRecord", "IsolationReport", "KernelUnavailable", "Limits",
    "Message", "Workspace", "WorkspaceEvent", "WorkspaceSnapshot", "release_mounts",
]
