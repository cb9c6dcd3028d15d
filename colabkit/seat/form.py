"""The person's form: generated from the answer's schema, offering only what is valid now.

A task step's form is built from `StepSchema` and the observation: the action menu holds
exactly `Observation.valid_actions` (no approve/reject without a request addressed to the
seat, only decisions once the side's budget is spent), the recipient menu the teammates, the
request menu the requests addressed to the seat, and each text field the schema's length
bound. A memory-build form is built from the build's own schema (the slots, and in
Scaffolded the gate rows with the gateable actions and the team as signatories; accept or
amend for the ratification).

Every submission goes through the same checks a model's answer does (pydantic validation
of the schema, `to_action`, the request being addressed to the seat). A submission that
fails them is shown with its reason and recorded as an invalid attempt; it is never sent.
Only a valid answer resolves the presentation's future: ipywidgets' documented way to wait
for a user without blocking the kernel (the session task awaits the future; no cell awaits).
"""

from __future__ import annotations

import asyncio
import html
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
from pydantic import BaseModel, ValidationError

from colabkit.session.actions import ACTION_HELP, MEMORY_UPDATE, STRUCTURE_ACTIONS, InvalidAction, to_action
from colabkit.session.seats.person import InvalidAttempt
from colabkit.session.seats.policy import Presentation, Question, stamp
from colabkit.team import GATEABLE_ACTIONS, UPDATE_SLOTS


def _wide() -> widgets.Layout:
    """A layout of its own for each wide widget: a shared one would hide every widget holding it
    when the form hides one (`_show`), and a page whose widget manager is still restoring the
    models made before the form may not know it yet ("Click to show javascript error")."""
    return widgets.Layout(width="95%")


# Labels as wide as their text: ipywidgets' fixed label width cuts "evidence standards" to "evidence sta...".
_LABEL = {"description_width": "initial"}
EVERYONE = "all"


class InvalidInput(ValueError):
    """What the person entered cannot be sent as it is (the reason is shown to them)."""


def _max_length(schema: type[BaseModel], name: str) -> int | None:
    for meta in schema.model_fields[name].metadata:
        if getattr(meta, "max_length", None) is not None:
            return int(meta.max_length)
    return None


def _checked(schema: type[BaseModel], data: dict[str, Any]) -> Any:
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput("; ".join(f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}"
                                     for e in exc.errors()[:3])) from None


def step_actions(question: Question[Any]) -> tuple[str, ...]:
    """The actions the form offers: exactly the observation's valid actions."""
    assert question.observation is not None
    return question.observation.valid_actions


def validate_step(question: Question[Any], fields: dict[str, str]) -> Any:
    """The `StepSchema` answer for `fields`, or `InvalidInput` saying why it cannot be sent."""
    obs = question.observation
    assert obs is not None
    if fields.get("action") not in obs.valid_actions:
        raise InvalidInput(f"{fields.get('action')!r} is not possible now; possible: {', '.join(obs.valid_actions)}")
    step = _checked(question.schema, fields)
    try:
        action = to_action(step, question.participant, question.team,
                           added=tuple(a for a in STRUCTURE_ACTIONS if a in obs.standing_actions))
    except InvalidAction as exc:
        raise InvalidInput(str(exc)) from None
    if action.type in ("approve", "reject") and action.request_id not in {r.request_id for r in obs.requests_for_me}:
        raise InvalidInput(f"{action.request_id} is not a request addressed to you")
    return step


class Form(ABC):
    """A form on a desk: collects fields, validates, records invalid attempts, resolves the future."""

    def __init__(self, question: Question[Any], presentation: Presentation[Any],
                 loop: asyncio.AbstractEventLoop) -> None:
        self.question, self.presentation, self.loop = question, presentation, loop
        self.error = widgets.HTML(layout=_wide())
        self.submit = widgets.Button(description="Submit", button_style="primary")
        self.submit.on_click(lambda _: self._submit_or_say_why())
        self.inputs: list[widgets.Widget] = []
        self.widget = widgets.VBox()  # each form's own layout replaces it
        self.on_sent: Callable[[], None] = lambda: None  # the desk's status line

    def watch(self, *inputs: widgets.Widget) -> None:
        """Stamp the person's first interaction with any of these inputs."""
        for widget in inputs:
            self.inputs.append(widget)
            widget.observe(self._touched, names="value")

    def _touched(self, _change: Any) -> None:
        if self.presentation.first_interaction is None:
            self.presentation.first_interaction = stamp()

    @abstractmethod
    def fields(self) -> dict[str, Any]:
        """What the person entered, as the answer's fields."""

    @abstractmethod
    def validate(self, fields: dict[str, Any]) -> Any:
        """The answer those fields make, or `InvalidInput` saying why there is none."""

    def try_submit(self) -> bool:
        """Send a valid answer (True), or show and record why not (False)."""
        if self.presentation.future.done():
            return False
        fields = self.fields()
        if self.presentation.first_interaction is None:
            self.presentation.first_interaction = stamp()
        try:
            value = self.validate(fields)
        except InvalidInput as exc:
            self.presentation.invalid_attempts.append(InvalidAttempt(at=stamp(), fields=fields, error=str(exc)))
            self.error.value = f'<span class="ck-invalid" style="color:#b00">Not sent: {html.escape(str(exc))}</span>'
            return False
        self.close(f"Sent: {html.escape(self.summary(fields))}. Waiting for the others...")
        self.on_sent()
        self.loop.call_soon_threadsafe(_resolve, self.presentation.future, value)
        return True

    def _submit_or_say_why(self) -> None:
        """The click handler: an unexpected error is shown on the form, never lost in the kernel's log."""
        try:
            self.try_submit()
        except Exception as exc:  # a click whose handler fails silently leaves the person stuck
            self.error.value = (f'<span class="ck-invalid" style="color:#b00">Not sent (an error in the page: '
                                f'{html.escape(type(exc).__name__)}: {html.escape(str(exc))}); try again or reload</span>')

    def close(self, message: str) -> None:
        for widget in (*self.inputs, self.submit):
            widget.disabled = True
        self.error.value = f'<span class="ck-sent">{message}</span>'

    def summary(self, fields: dict[str, Any]) -> str:
        return str(fields.get("action", self.question.stage))


def _resolve(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


class StepForm(Form):
    """A task step: one valid action and the fields it needs."""

    def __init__(self, question: Question[Any], presentation: Presentation[Any],
                 loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(question, presentation, loop)
        obs = question.observation
        assert obs is not None
        schema = question.schema
        others = [p for p in question.team if p != question.participant]
        self.action = widgets.Dropdown(options=[(ACTION_HELP[a].split(":")[0], a) for a in step_actions(question)],
                                       description="action", style=_LABEL)
        self.to = widgets.Dropdown(options=[EVERYONE, *others], description="to", style=_LABEL)
        # Gated requests and a living memory's updates (Dynamic: "upd-N from ...") are both decided here.
        self.request = widgets.Dropdown(options=[*(r.request_id for r in obs.requests_for_me),
                                                 *(line.split(" ", 1)[0] for line in obs.updates_for_me)],
                                        description="request", style=_LABEL)
        self.slot = widgets.Dropdown(options=UPDATE_SLOTS, description="slot", style=_LABEL)
        limit = _max_length(schema, "content")
        self.text = widgets.Textarea(description="text", style=_LABEL, layout=_wide(),
                                     placeholder=f"at most {limit} characters")
        self.code = widgets.Textarea(description="code", style=_LABEL, layout=widgets.Layout(width="95%", height="120px"),
                                     placeholder="Python for the shared kernel")
        self.note = widgets.Text(description="note", style=_LABEL, layout=_wide(),
                                 placeholder="optional private note (your scratchpad; teammates never see it)")
        self.watch(self.action, self.to, self.request, self.slot, self.text, self.code, self.note)
        self.action.observe(lambda _: self._show(), names="value")
        self.widget = widgets.VBox([self.action, self.to, self.request, self.slot, self.text, self.code, self.note,
                                    self.submit, self.error])
        self.widget.add_class("ck-form")
        self._show()

    def _show(self) -> None:
        kind = self.action.value
        visible = {"send_message": (self.to, self.text), "execute_code": (self.code,), "edit_result": (self.text,),
                   "approve": (self.request, self.text), "reject": (self.request, self.text),
                   "finish": (self.text,), MEMORY_UPDATE: (self.slot, self.text)}.get(kind, ())
        for widget in (self.to, self.request, self.slot, self.text, self.code):
            widget.layout.display = "" if widget in visible else "none"
        if kind == "edit_result" and not self.text.value and self.question.observation is not None:
            self.text.value = self.question.observation.editor  # edit what is there
        self.text.description = {"send_message": "message", "edit_result": "hypothesis",
                                 MEMORY_UPDATE: "new text"}.get(kind, "reason")

    def fields(self) -> dict[str, Any]:
        kind = self.action.value
        content = self.code.value if kind == "execute_code" else "" if kind == "wait" else self.text.value
        to = {"send_message": self.to.value, "approve": self.request.value or "", "reject": self.request.value or "",
              MEMORY_UPDATE: self.slot.value}.get(kind, "")
        return {"thought": self.note.value, "action": kind, "content": content, "to": to}

    def validate(self, fields: dict[str, Any]) -> Any:
        return validate_step(self.question, fields)


class ProposeForm(Form):
    """A memory proposal: the schema's slots, and in Scaffolded its gate rows."""

    def __init__(self, question: Question[Any], presentation: Presentation[Any],
                 loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(question, presentation, loop)
        schema = question.schema
        self.slots = {name: widgets.Textarea(description=name.replace("_", " "), style=_LABEL, layout=_wide(),
                                             placeholder=f"{field.description} (at most {_max_length(schema, name)})")
                      for name, field in schema.model_fields.items() if name != "gates"}
        rows: list[widgets.Widget] = []
        self.gates: list[tuple[widgets.Dropdown, widgets.Dropdown, widgets.Dropdown, widgets.Text]] = []
        if "gates" in schema.model_fields:
            limit = schema.model_fields["gates"].metadata[0].max_length if schema.model_fields["gates"].metadata else 3
            for _ in range(int(limit)):
                row = (widgets.Dropdown(options=["(no gate)", *GATEABLE_ACTIONS], description="gate", style=_LABEL),
                       widgets.Dropdown(options=list(question.team), description="signed by", style=_LABEL),
                       widgets.Dropdown(options=["all", "data_changing"], description="scope", style=_LABEL),
                       widgets.Text(description="note", style=_LABEL, placeholder="what the signatory should check"))
                self.gates.append(row)
                rows.append(widgets.HBox(list(row)))
            self.watch(*(w for row in self.gates for w in row))
        self.watch(*self.slots.values())
        self.widget = widgets.VBox([*self.slots.values(), *rows, self.submit, self.error])
        self.widget.add_class("ck-form")

    def fields(self) -> dict[str, Any]:
        data: dict[str, Any] = {name: box.value for name, box in self.slots.items()}
        if self.gates:
            data["gates"] = [{"action": a.value, "signatory": s.value, "scope": sc.value, "note": n.value}
                             for a, s, sc, n in self.gates if a.value != "(no gate)"]
        return data

    def validate(self, fields: dict[str, Any]) -> Any:
        if not any(str(fields[name]).strip() for name in self.slots):
            raise InvalidInput("write at least one slot")
        return _checked(self.question.schema, fields)

    def summary(self, fields: dict[str, Any]) -> str:
        return "your proposal"


class RatifyForm(Form):
    """A ratification: accept the draft, or amend it with one change."""

    def __init__(self, question: Question[Any], presentation: Presentation[Any],
                 loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(question, presentation, loop)
        self.decision = widgets.ToggleButtons(options=["accept", "amend"], description="decision", style=_LABEL)
        self.amendment = widgets.Textarea(description="amendment", style=_LABEL, layout=_wide(),
                                          placeholder="the one change you need (amend only)")
        self.watch(self.decision, self.amendment)
        self.widget = widgets.VBox([self.decision, self.amendment, self.submit, self.error])
        self.widget.add_class("ck-form")

    def fields(self) -> dict[str, Any]:
        reply: dict[str, Any] = {"decision": self.decision.value}
        if self.decision.value == "amend":
            reply["amendment"] = self.amendment.value
        return {"reply": reply}

    def validate(self, fields: dict[str, Any]) -> Any:
        return _checked(self.question.schema, fields)

    def summary(self, fields: dict[str, Any]) -> str:
        return str(fields["reply"]["decision"])


FORMS: dict[str, Callable[[Question[Any], Presentation[Any], asyncio.AbstractEventLoop], Form]] = {
    "step": StepForm, "propose": ProposeForm, "ratify": RatifyForm,
    "consolidate": ProposeForm, "amend": ProposeForm}  # the AI's seat writes the memory in the same slots
