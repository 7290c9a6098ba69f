"""Editing services: what happens between an item opening in the editor and its effort being stored.

The flow, one module per step (the contract with the browser is the README's section "The editor's
ingestion API"):

- lifecycle.py: open an item (a Visit per page load), submit it (effort derived from the stored
  log by annotations/effort.py, replayed by annotations/replay.py, bounded by the server's own
  clock, clock.py), or skip it.
- selectors.py: the reads: the editor page's config and highlights, a stored post-edit's active
  time recomputed under other idle thresholds.
- ingestion.py: a batch of one page load's events, stored exactly once; missing seqs recorded.
- event_store.py: the raw SQL of ingestion's and autosave's hot paths, and reading a stored log back.
- drafts.py: autosaved drafts with optimistic locking.
- clock.py: the server's clock over an annotator's page loads: one running at a time, the
  tolerance as one budget per annotator, the bound of a post-edit's time (bounded_effort).
- locks.py: the rows every write locks, in one order (annotator's clock -> assignment -> post-edit
  -> visits), and the hot paths' statements that lock the post-edit.
- navigation.py: the editor, diff and next-item URLs.
- errors.py: the refusals, each with its HTTP status and machine-readable code.
"""
