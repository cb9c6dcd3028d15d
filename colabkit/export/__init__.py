"""Export stored sessions to the formats other tools read: Inspect AI's `.eval` logs.

The field's transcript tools (Inspect's `inspect view`, Docent, Inspect Scout) read Inspect
logs, so a session exported here opens there: one sample per session, its steps as Inspect's
typed events (model calls, tool calls for cells, approvals for gates, info events for the
rest) and colabkit's scores with their judge's grade. Needs the optional extra
`colabkit[inspect]`. Reads the store and the evaluation layer's scores; writes nothing back.

    from colabkit.export import export_inspect
    export_inspect("results/demo", "results/demo/inspect")
"""

from colabkit.export.inspect_log import ExportedLog, export_inspect
from colabkit.export.inspect_sample import session_sample

__all__ = ["ExportedLog", "export_inspect", "session_sample"]
