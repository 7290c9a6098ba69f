"""Form fields and the refusable form, shared by the admin site and the pages."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from django import forms
from django.db import models
from django.forms.fields import InvalidJSONInput

from editlab import safe_json
from editlab.refusals import Outcome, Refusal, attempt

T = TypeVar("T")


class LimitedJSONFormField(forms.JSONField):
    """Django's JSON form field, read with editlab.safe_json: JSON nested past the limit, NaN or
    Infinity, NUL or a lone surrogate are a form error naming the problem (Django's own field let
    RecursionError through: a 500 on the admin's change page)."""

    def to_python(self, value):
        if self.disabled or value in self.empty_values or isinstance(value, list | dict | int | float):
            return super().to_python(value)
        try:
            return safe_json.loads(value)
        except json.JSONDecodeError:
            raise forms.ValidationError(
                self.error_messages["invalid"], code="invalid", params={"value": value}
            ) from None
        except ValueError as exc:
            raise forms.ValidationError(str(exc), code="invalid") from None

    def bound_data(self, data, initial):
        # Redisplaying the rejected input parses it again: with the same limits.
        if self.disabled or data is None or not isinstance(data, str):
            return super().bound_data(data, initial)
        try:
            return safe_json.loads(data)
        except ValueError:
            return InvalidJSONInput(data)


# ModelAdmin.formfield_overrides for models with JSON columns.
JSON_FORM_FIELDS: dict[type[models.Field[Any, Any]], dict[str, Any]] = {
    models.JSONField: {"form_class": LimitedJSONFormField}
}


class RefusalForm(forms.Form):
    """A form whose submission a service may refuse: `submit` runs the service and puts its refusal on the
    form, under the field the message names ("field: what is wrong", or a key of FIELDS_OF_SERVICE), else
    above the form. The view then renders the form again with the refusal's status."""

    # A service's name of a field -> this form's name of it, where they differ.
    FIELDS_OF_SERVICE: dict[str, str] = {}

    refusal: Refusal | None = None

    def submit(self, service: Callable[..., T], /, **kwargs: Any) -> Outcome[T]:
        outcome = attempt(service, **kwargs)
        if outcome.refusal is not None:
            self.refusal = outcome.refusal
            self.add_refusal(outcome.refusal)
        return outcome

    def add_refusal(self, refusal: Refusal) -> None:
        field, _, message = str(refusal).partition(": ")
        name = self.FIELDS_OF_SERVICE.get(field, field)
        if message and name in self.fields:
            self.add_error(name, message)
        else:
            self.add_error(None, str(refusal))
