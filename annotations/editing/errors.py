"""What the editing services refuse, and how each refusal answers the client (status, code, data)."""

from typing import Any

from editlab.refusals import Refusal


class EditingError(Refusal):
    """A request the editing services refuse; the message says why, for the client."""


class InvalidInput(EditingError):
    pass


class UnknownVisit(EditingError):
    code = "unknown_page"


class PostEditClosed(EditingError):
    status = 409
    code = "closed"


class SeqConflict(EditingError):
    status = 409
    code = "seq_conflict"

    def __init__(self, message: str, *, next_seq: int):
        super().__init__(message)
        self.next_seq = next_seq

    def data(self) -> dict[str, Any]:
        return {"next_seq": self.next_seq}


class DraftConflict(EditingError):
    status = 409
    code = "conflict"

    def __init__(self, *, server_text: str, server_version: int):
        super().__init__("conflict")
        self.server_text = server_text
        self.server_version = server_version

    def data(self) -> dict[str, Any]:
        return {"server_text": self.server_text, "server_version": self.server_version}


def ensure_text(value: str, *, field: str) -> None:
    """Refuse a text PostgreSQL cannot store (NUL, an unpaired surrogate) before it reaches a row."""
    if "\x00" in value:
        raise InvalidInput(f"{field} contains a NUL character, which cannot be stored")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{field} contains an unpaired surrogate (broken UTF-16)") from None
