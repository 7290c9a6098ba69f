"""The one base of every refusal: a request, file or option the code will not act on.

A refusal carries a message for a person (`str(exc)`), a machine `code`, the HTTP `status` it
answers with and `data`, the extra keys of its answer (`next_seq`, `server_text`, ...).
`editlab.errors` turns it into `{"detail", "code", **data}` for the API and into a page with the
message for the browser. This module imports nothing of Django, so that any layer may raise one.
A page that shows a refusal in place (on its form, above its table) runs the service through
`attempt`, or a form's `submit` (editlab.forms.RefusalForm), never a try/except of its own.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast


class Refusal(Exception):
    """Refused; the message says why, for the person who asked."""

    status = 400
    code = "invalid"

    def data(self) -> dict[str, Any]:
        """The answer's keys besides `detail` and `code`."""
        return {}

    def body(self) -> dict[str, Any]:
        """The answer in the API's one shape."""
        return {"detail": str(self), "code": self.code, **self.data()}


# Refusals of who asks, not of what they asked: never shown in place of a form or a page's part, always the
# refused page (editlab.errors) or the API's answer.
NOT_ABOUT_THE_INPUT = frozenset({401, 403, 404})

T = TypeVar("T")


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What `attempt` got: the service's value, or the refusal of the input it raised instead. True when
    the service went through."""

    value: T  # None when refused
    refusal: Refusal | None = None

    def __bool__(self) -> bool:
        return self.refusal is None


def attempt(service: Callable[..., T], /, **kwargs: Any) -> Outcome[T]:
    """`service(**kwargs)`, with a refusal of its input kept in the outcome for the page to show in place
    (beside the form's field, above a table). The one way a page catches a refusal: any other exception,
    and a refusal of who asks (403, 404), go on to editlab.errors."""
    try:
        return Outcome(service(**kwargs))
    except Refusal as exc:
        if exc.status in NOT_ABOUT_THE_INPUT:
            raise
        return Outcome(cast(T, None), exc)
