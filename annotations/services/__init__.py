"""Admin-side writes, one module per entity: users, projects, batches, assignment, items.

Every function that changes data is keyword-only, typed, named `<entity>_<action>` and atomic.
Bad input raises ServiceError (services/errors.py) with a message that starts with the field's
name ("name: must not be empty"); callers (commands, pages, API) show it. Reads that several
views share live in annotations/selectors.py.
"""
