"""The participant's page around the session: its notebook copy, how to serve it, the questionnaire.

`participant_notebook` writes a copy of `take_a_seat.ipynb` for one person: its parameters
set (papermill's parameterisation) and the researcher's text replaced by a short welcome
for the participant (a person in the AI agent's seat is welcomed as the AI agent), so the
page served by Voilà holds nothing meant for the researcher.
`voila_command` and `lab_command` are the commands `colabkit seat` prints; JupyterLab reads
the project's own Jupyter config (`jupyter/`, which allows running as root).

After the session the page offers an optional questionnaire (Co-Gym-style 1-5 ratings and a
comment); its answers, with the question texts shown, go to `person-<seat>.json` in the session
folder, one file per person.
"""

from __future__ import annotations

import html
import json
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from colabkit.session import SessionSpec
from colabkit.session.seats.person import SeatTerms
from colabkit.session.seats.policy import stamp
from colabkit.store import atomic_write_text

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "take_a_seat.ipynb"
JUPYTER_CONFIG = REPO / "jupyter"
KERNEL_CULL_S = 600  # a closed participant page's kernel is stopped within about this long
PERSON_RECORD_VERSION = 2  # 2: one file per seat (person-D.json, person-R.json), was person.json
# Co-Gym's real-condition participants rated the outcome and the collaboration on 1-5 scales
# with free-text feedback (SALT-NLP/cogym-real-trajectories); these are the same kinds of item.
QUESTIONS = {
    "outcome": "How satisfied are you with the team's final result?",
    "collaboration": "How well did the AI agent collaborate with you?",
    "communication": "How clear was the team's communication?",
    "control": "How much control did you have over what the team did?",
}
AI_SEAT_QUESTIONS = {**QUESTIONS, "collaboration": "How well did your teammates collaborate with you?"}
"""The questions for a person in the AI agent's seat: the same items, the one about the AI agent
asked of the teammates (the person is the AI agent there). The texts shown are stored with the
answers, so an analysis never pools differently worded items unknowingly."""


def questions_for(seat: str) -> dict[str, str]:
    return AI_SEAT_QUESTIONS if seat == "ai" else QUESTIONS


WELCOME = """# Welcome

You are a member of a small team solving a data-analysis task together with an AI agent.
Below you see what your role sees: your private briefing, the team's notebook and chat, and
the team's result. When it is your turn, a form under it offers what you can do now; the
others wait until you submit. Take your time.

If you reload this page or open it again, you return to where you were. When the session
ends, a few optional questions follow."""
AI_SEAT_WELCOME = """# Welcome

You play the team's AI agent in a data-analysis task: your teammates are simulated. Below you
see exactly what the AI agent sees: the task's briefing, the team's notebook and chat, every
teammate's activity and the team's result. When it is your turn, a form under it offers what
the AI agent can do now, finishing the task among it; the others wait until you submit. Take
your time.

If you reload this page or open it again, you return to where you were. When the session
ends, a few optional questions follow."""
"""The welcome of a person in the AI agent's seat (WELCOME speaks to a teammate of an AI agent)."""


def person_file(seat: str) -> str:
    """The person record's file name in the session folder, for the person in `seat`."""
    return f"person-{seat}.json"


def questionnaire(folder: Path, spec: SessionSpec, seat: str) -> widgets.VBox:
    """The optional post-session questionnaire; its answers are written to `person_file(seat)`."""
    asked = questions_for(seat)
    scales = {key: widgets.ToggleButtons(options=[1, 2, 3, 4, 5], value=None, description="", style={"button_width": "40px"})
              for key in asked}
    comment = widgets.Textarea(placeholder="Anything else you want to tell us (optional)",
                               layout=widgets.Layout(width="95%"))
    note = widgets.HTML()
    send = widgets.Button(description="Send answers", button_style="primary")
    shown = stamp()

    def submit(_: Any) -> None:
        ratings = {key: scale.value for key, scale in scales.items()}
        save_person_record(folder, spec, seat, {"ratings": ratings, "questions": asked, "comment": comment.value,
                                                "shown": shown.model_dump(), "submitted": stamp().model_dump()})
        for widget in (*scales.values(), comment, send):
            widget.disabled = True
        note.value = "<b>Thank you: your answers are saved.</b>"

    send.on_click(submit)
    rows: list[widgets.Widget] = [widgets.HTML("<h4>A few questions (optional; 1 = not at all, 5 = fully)</h4>")]
    for key, text in asked.items():
        rows += [widgets.HTML(html.escape(text)), scales[key]]
    box = widgets.VBox([*rows, comment, send, note])
    box.add_class("ck-questionnaire")
    return box


def answered(folder: Path, seat: str) -> bool:
    """Whether the person in `seat` has sent the questionnaire already."""
    path = folder / person_file(seat)
    return path.is_file() and json.loads(path.read_text()).get("questionnaire") is not None


def save_person_record(folder: Path, spec: SessionSpec, seat: str, answers: dict[str, Any] | None) -> Path:
    """Write `person_file(seat)` (who sat where, on what terms, and the questionnaire) atomically."""
    terms = SeatTerms.model_validate(spec.model_for(seat).extra["seat"])
    path = folder / person_file(seat)
    atomic_write_text(path, json.dumps({"schema_version": PERSON_RECORD_VERSION, "session_id": spec.session_id,
                                        "seat": seat, "terms": terms.model_dump(mode="json"),
                                        "questionnaire": answers}, indent=1))
    return path


def voila_command(notebook: Path, port: int = 8866, ip: str = "127.0.0.1", *, cull_s: int = KERNEL_CULL_S) -> str:
    """The command that serves a participant's notebook copy as their page.

    A closed page's kernel is stopped by the page itself when the browser lets it (Voila's
    `beforeunload` call), else by Voila's culler `cull_s` seconds after its last page
    disconnected; a kernel with its page open is never culled. The kernel's connection to the
    session host goes with it, so the host (`SeatPlan.idle_exit_s`) stops as well. Voila counts a
    page's kernel as idle from the end of the notebook's run until the page's websocket connects,
    so `cull_s` must exceed the slowest page load (over 10 s was seen on a loaded machine): a
    kernel culled before its page connects leaves a page whose clicks reach nothing.
    """
    interval = max(1, min(60, cull_s // 2))
    return shlex.join([sys.executable, "-m", "voila", str(notebook), "--no-browser", f"--port={port}",
                       f"--Voila.ip={ip}", f"--MappingKernelManager.cull_idle_timeout={cull_s}",
                       f"--MappingKernelManager.cull_interval={interval}",
                       "--MappingKernelManager.cull_connected=False"])


def lab_command(path: Path) -> str:
    """JupyterLab on `path`, reading the project's own Jupyter config (as `make lab` does)."""
    return f"JUPYTER_CONFIG_PATH={shlex.quote(str(JUPYTER_CONFIG))} " + shlex.join(
        [str(Path(sys.executable).parent / "jupyter"), "lab", str(path)])


def participant_notebook(folder: Path | str, parameters: Mapping[str, Any]) -> Path:
    """A participant's copy of take_a_seat.ipynb: `parameters` set, the researcher's text replaced."""
    import nbformat
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    nb = parameterize_notebook(load_notebook_node(str(NOTEBOOK)), dict(parameters))
    nb.cells = [cell for cell in nb.cells if cell.cell_type == "code"]
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(AI_SEAT_WELCOME if parameters.get("seat") == "ai" else WELCOME))
    nb.metadata.pop("papermill", None)
    name = f"seat-{parameters.get('participant_id', 'person')}.ipynb"
    nbformat.write(nb, folder / name)
    return folder / name
