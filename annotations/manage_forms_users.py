"""Forms of the Users page (annotations/views/users.py): they parse and check input; the services in
annotations/services/users.py make the changes and refuse what an admin may not do."""

from django import forms

from annotations.roles import ROLES
from editlab.forms import RefusalForm

ROLE_CHOICES = [(role, role) for role in ROLES]
PASSWORD_HELP = "Leave empty to generate one; it is shown once, on the next page."


class UserFilterForm(forms.Form):
    """The list's filters (a GET query): a part of the name, a role, active or not."""

    q = forms.CharField(max_length=150, required=False, label="Name contains")
    role = forms.ChoiceField(choices=[("", "any role"), *ROLE_CHOICES, ("none", "no role")], required=False)
    active = forms.ChoiceField(
        choices=[("", "active or not"), ("yes", "active"), ("no", "deactivated")], required=False, label="Status"
    )


class UserAddForm(RefusalForm):
    username = forms.CharField(max_length=150, help_text="Letters, digits and @ . + - _ (at most 150).")
    role = forms.ChoiceField(choices=ROLE_CHOICES, initial=ROLES[1])
    password = forms.CharField(
        required=False,
        strip=False,
        max_length=4096,
        label="Initial password",
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=PASSWORD_HELP,
    )


class UserRoleForm(forms.Form):
    role = forms.ChoiceField(choices=ROLE_CHOICES)


class UserActiveForm(forms.Form):
    active = forms.TypedChoiceField(choices=[("1", "reactivate"), ("0", "deactivate")], coerce=lambda v: v == "1")


class UserPasswordForm(forms.Form):
    password = forms.CharField(
        required=False,
        strip=False,
        max_length=4096,
        label="New password",
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=PASSWORD_HELP,
    )
