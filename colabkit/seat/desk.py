"""The seat's page in a notebook (or a Voilà page): the current question and its form.

`WidgetDesk` is the `Desk` a `PersonSeat` presents questions to. It shows one question at a
time: the persona's view (`view.question_html`) and the form for that question
(`form.FORMS`). The HTML shown is hashed into the step's record (`rendered_hash`), so the
record says exactly what the person was looking at. Between questions the page says whose
turn it is, so the person knows the session is alive while the others act.
"""

from __future__ import annotations

import asyncio
import html
from typing import Any

import ipywidgets as widgets

from colabkit.hashing import sha256_hex
from colabkit.seat.form import FORMS, Form
from colabkit.seat.view import question_html
from colabkit.session.seats.policy import Presentation, Question


class WidgetDesk:
    """One seat's widgets: a status line, the view, and the current form."""

    def __init__(self) -> None:
        self.status = widgets.HTML("<b>Starting the session...</b>")
        self.status.add_class("ck-status")
        self.view = widgets.HTML()
        self.view.add_class("ck-view")
        self.form_box = widgets.VBox()
        self.widget = widgets.VBox([self.status, self.view, self.form_box])
        self.widget.add_class("ck-desk")
        self.current: Form | None = None
        self.asked = 0

    def present(self, question: Question[Any], number: int | None = None) -> Presentation[Any]:
        """Show `question` (the seat's `number`-th, counted by the session) and its form."""
        loop = asyncio.get_running_loop()
        shown = question_html(question)
        presentation: Presentation[Any] = Presentation(future=loop.create_future(), rendered_hash=sha256_hex(shown))
        self.view.value = shown
        self.current = FORMS[question.stage](question, presentation, loop)
        self.current.on_sent = lambda: setattr(self.status, "value", "<b>Sent. The others are acting...</b>")
        self.form_box.children = [self.current.widget]
        self.asked = number if number is not None else self.asked + 1
        what = {"step": "your step", "propose": "your memory proposal", "ratify": "your ratification",
                "consolidate": "the merged memory", "amend": "the amended memory"}[question.stage]
        self.status.value = (f'<b class="ck-your-turn">Your turn ({html.escape(question.participant)}): {what}</b> '
                             f"(question {self.asked}). The others wait until you submit.")
        return presentation

    def withdraw(self, presentation: Presentation[Any], reason: str) -> None:
        if self.current is not None and self.current.presentation is presentation:
            self.current.close(html.escape(reason))
            self.status.value = f"<b>{html.escape(reason)}</b>"

    def withdraw_current(self, reason: str) -> None:
        if self.current is not None:
            self.withdraw(self.current.presentation, reason)

    def waiting(self) -> None:
        """Nothing is asked of this seat now: the others are acting."""
        self.form_box.children = []
        self.status.value = "<b>The others are acting... your turn comes next.</b>"

    def ended(self, text: str) -> None:
        """The session is over: say so and take the last form away."""
        if self.current is not None:
            self.current.close("The session has ended.")
        self.status.value = f'<b class="ck-ended">{html.escape(text)}</b>'
