"""The one base of every refusal: a request, file or option the code will not act on.

A refusal carries a message for a person (`str(exc)`), a machine `code`, the HTTP `status` it
answers with and `data`, the extra keys of its answer (`next_seq`, `server_text`, ...).
`editlab.errors` turns it into `{"detail", "code", **data}` for the API and into a page with the
message for the browser. This module imports nothing of Django, so that any layer may raise one.
"""

from typing import Any


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
