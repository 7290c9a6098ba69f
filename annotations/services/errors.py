"""The one error the admin services raise."""

import re
from typing import Any

from editlab.refusals import Refusal

_FIELD_PREFIX = re.compile(r"^([\w.\[\]]+): (.+)$", re.S)


class ServiceError(Refusal, ValueError):
    """Input the service refuses; the message is meant for the person who gave it and starts with the
    field's name ("overlap: must be at least 1"), which the answer's `errors` repeats by field."""

    def data(self) -> dict[str, Any]:
        match = _FIELD_PREFIX.match(str(self))
        return {"errors": {match.group(1): [match.group(2)]}} if match else {}
