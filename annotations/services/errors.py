"""The one error the admin services raise."""


class ServiceError(ValueError):
    """Input the service refuses; the message is meant for the person who gave it and starts with the
    field's name ("overlap: must be at least 1")."""
