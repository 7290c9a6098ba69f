"""The database triggers that keep the progress page's figures (annotations/models/progress.py), on SQLite
and PostgreSQL; installed and filled by migration 0020.

Two levels. The base tables' triggers rewrite an assignment's entry (delete it, insert it anew from its
assignment, item and post-edit) whenever one of the columns the page reads changes: an assignment made,
changed or deleted; a post-edit made, saved or deleted; an item moved to another batch or project. The
entries' triggers add an entry to its cell (insert or count up, the latest moment raised) or take it out
(count down; when it held the cell's latest moment, the latest is read anew from the cell's entries, one
seek of the entry index). Every figure of a cell is thus a function of its entries, and every entry of its
rows: nothing accumulates that a lost update could leave wrong.

PostgreSQL runs concurrent writers: an entry is rewritten under a transaction-level advisory lock on its
assignment (taken after the row the write changed, so last in the lock order), each statement after it
seeing what the writers before committed; a cell is locked before its latest is read anew; an assignment
made or moved takes a share lock on its item, so a concurrent change of the item's batch rewrites it too.
"""

ENTRY = "annotations_progressentry"
CELL = "annotations_progresscell"
ENTRY_COLUMNS = (
    'assignment_id, project_id, annotator_id, batch_key, "condition", status, flags, moment, uncorroborated, active_ms'
)
CELL_KEY = ("project_id", "annotator_id", "batch_key", '"condition"', "status", "flags")

# An entry's values from its rows, for the assignments `{where}` selects (a.: assignment, i.: item, p.: post-edit).
_ENTRY_SELECT = {
    "sqlite": """SELECT a.id, i.project_id, a.annotator_id, COALESCE(i.batch_id, 0), a."condition", a.status,
    CASE WHEN a.status <> 'submitted' OR p.flags IS NULL OR NOT json_valid(p.flags) THEN ''
         WHEN json_type(p.flags) = 'array' AND json_array_length(p.flags) > 0 THEN p.flags ELSE '' END,
    NULLIF(max(COALESCE(a.started, ''), COALESCE(a.finished, ''), COALESCE(p.updated, '')), ''),
    p.uncorroborated_keys, p.active_ms
  FROM annotations_assignment a JOIN annotations_item i ON i.id = a.item_id
  LEFT JOIN annotations_postedit p ON p.assignment_id = a.id
  WHERE a.reviews_id IS NULL AND {where}""",
    "postgresql": """SELECT a.id, i.project_id, a.annotator_id, COALESCE(i.batch_id, 0), a."condition", a.status,
    CASE WHEN a.status = 'submitted' AND jsonb_typeof(p.flags) = 'array'
         THEN CASE WHEN jsonb_array_length(p.flags) > 0 THEN p.flags::text ELSE '' END ELSE '' END,
    GREATEST(a.started, a.finished, p.updated),
    p.uncorroborated_keys, p.active_ms
  FROM annotations_assignment a JOIN annotations_item i ON i.id = a.item_id
  LEFT JOIN annotations_postedit p ON p.assignment_id = a.id
  WHERE a.reviews_id IS NULL AND {where}""",
}


def _key_match(left: str, right: str) -> str:
    return " AND ".join(f"{left}.{column} = {right}.{column}" for column in CELL_KEY)


_TIMED = "CASE WHEN {row}.status = 'submitted' AND {row}.active_ms IS NOT NULL THEN 1 ELSE 0 END"
_CELL_COLUMNS = f"{', '.join(CELL_KEY)}, n, uncorroborated, timed, latest"


def _cell_in(vendor: str) -> str:
    """The statement adding NEW (an entry) to its cell."""
    values = ", ".join(f"NEW.{column}" for column in CELL_KEY)
    if vendor == "sqlite":
        conflict = f"ON CONFLICT ({', '.join(CELL_KEY)})"
        raised = "CASE WHEN latest IS NULL OR excluded.latest > latest THEN excluded.latest ELSE latest END"
        own = ""
    else:
        conflict = "ON CONFLICT ON CONSTRAINT progress_cell_key"
        raised = f"GREATEST({CELL}.latest, EXCLUDED.latest)"
        own = f"{CELL}."
    return (
        f"INSERT INTO {CELL} ({_CELL_COLUMNS}) VALUES ({values}, 1, COALESCE(NEW.uncorroborated, 0), "
        f"{_TIMED.format(row='NEW')}, NEW.moment) {conflict} DO UPDATE SET n = {own}n + 1, "
        f"uncorroborated = {own}uncorroborated + excluded.uncorroborated, timed = {own}timed + excluded.timed, "
        f"latest = {raised}"
    )


def _cell_out() -> str:
    """The statement taking OLD (an entry, already deleted) out of its cell."""
    key = " AND ".join(f"{column} = OLD.{column}" for column in CELL_KEY)
    entries = " AND ".join(f"e.{column} = OLD.{column}" for column in CELL_KEY)
    return (
        f"UPDATE {CELL} SET n = n - 1, uncorroborated = uncorroborated - COALESCE(OLD.uncorroborated, 0), "
        f"timed = timed - {_TIMED.format(row='OLD')}, "
        "latest = CASE WHEN OLD.moment IS NOT NULL AND (latest IS NULL OR OLD.moment >= latest) "
        f"THEN (SELECT MAX(e.moment) FROM {ENTRY} e WHERE {entries}) ELSE latest END WHERE {key}"
    )


def _rewrite_sqlite(ids: str) -> str:
    """SQLite: the statements rewriting the entries of the assignments whose ids `ids` lists."""
    select = _ENTRY_SELECT["sqlite"].format(where=f"a.id IN ({ids})")
    return f"DELETE FROM {ENTRY} WHERE assignment_id IN ({ids});\n  INSERT INTO {ENTRY} ({ENTRY_COLUMNS}) {select};"


ASSIGNMENT_COLUMNS = 'id, item_id, annotator_id, status, started, finished, "condition", reviews_id'
POST_EDIT_COLUMNS = "assignment_id, flags, updated, uncorroborated_keys, active_ms"


# A post-edit saved: only its moment (`updated`) moved on, nothing else its entry holds changed. Its entry's
# moment and its cell's latest are then raised in place, without rewriting the entry: the draft save's path.
_SAVED = {
    "sqlite": "OLD.assignment_id = NEW.assignment_id AND OLD.flags IS NEW.flags "
    "AND OLD.uncorroborated_keys IS NEW.uncorroborated_keys AND OLD.active_ms IS NEW.active_ms "
    "AND NEW.updated IS NOT NULL AND (OLD.updated IS NULL OR NEW.updated >= OLD.updated)",
    "postgresql": "OLD.assignment_id = NEW.assignment_id AND OLD.flags IS NOT DISTINCT FROM NEW.flags "
    "AND OLD.uncorroborated_keys IS NOT DISTINCT FROM NEW.uncorroborated_keys "
    "AND OLD.active_ms IS NOT DISTINCT FROM NEW.active_ms "
    "AND NEW.updated IS NOT NULL AND (OLD.updated IS NULL OR NEW.updated >= OLD.updated)",
}


def sqlite_triggers() -> list[str]:
    return [
        f"""CREATE TRIGGER progress_assignment_insert AFTER INSERT ON annotations_assignment BEGIN
  {_rewrite_sqlite("NEW.id")}
END""",
        f"""CREATE TRIGGER progress_assignment_update AFTER UPDATE OF {ASSIGNMENT_COLUMNS} ON annotations_assignment
BEGIN
  {_rewrite_sqlite("OLD.id, NEW.id")}
END""",
        f"""CREATE TRIGGER progress_assignment_delete AFTER DELETE ON annotations_assignment BEGIN
  DELETE FROM {ENTRY} WHERE assignment_id = OLD.id;
END""",
        f"""CREATE TRIGGER progress_post_edit_insert AFTER INSERT ON annotations_postedit BEGIN
  {_rewrite_sqlite("NEW.assignment_id")}
END""",
        f"""CREATE TRIGGER progress_post_edit_update AFTER UPDATE OF {POST_EDIT_COLUMNS} ON annotations_postedit
WHEN NOT ({_SAVED["sqlite"]}) BEGIN
  {_rewrite_sqlite("OLD.assignment_id, NEW.assignment_id")}
END""",
        f"""CREATE TRIGGER progress_post_edit_saved AFTER UPDATE OF {POST_EDIT_COLUMNS} ON annotations_postedit
WHEN {_SAVED["sqlite"]} BEGIN
  UPDATE {ENTRY} SET moment = NEW.updated
    WHERE assignment_id = NEW.assignment_id AND (moment IS NULL OR moment < NEW.updated);
  UPDATE {CELL} SET latest = NEW.updated
    WHERE ({", ".join(CELL_KEY)}) = (SELECT {", ".join(CELL_KEY)} FROM {ENTRY} WHERE assignment_id = NEW.assignment_id)
    AND (latest IS NULL OR latest < NEW.updated);
END""",
        f"""CREATE TRIGGER progress_post_edit_delete AFTER DELETE ON annotations_postedit BEGIN
  {_rewrite_sqlite("OLD.assignment_id")}
END""",
        f"""CREATE TRIGGER progress_item_update AFTER UPDATE OF id, project_id, batch_id ON annotations_item BEGIN
  {_rewrite_sqlite("SELECT id FROM annotations_assignment WHERE item_id IN (OLD.id, NEW.id)")}
END""",
        f"""CREATE TRIGGER progress_project_delete AFTER DELETE ON annotations_project BEGIN
  DELETE FROM {ENTRY} WHERE project_id = OLD.id;
  DELETE FROM {CELL} WHERE project_id = OLD.id;
END""",
    ]


def sqlite_entry_triggers() -> list[str]:
    return [
        f"CREATE TRIGGER progress_entry_insert AFTER INSERT ON {ENTRY} BEGIN\n  {_cell_in('sqlite')};\nEND",
        f"CREATE TRIGGER progress_entry_delete AFTER DELETE ON {ENTRY} BEGIN\n  {_cell_out()};\nEND",
    ]


# An arbitrary first key of the advisory locks on assignments (the second is the assignment's id).
_LOCK_CLASS = 240_020


def postgresql_triggers() -> list[str]:
    select = _ENTRY_SELECT["postgresql"].format(where="a.id = aid")
    return [
        f"""CREATE FUNCTION progress_rewrite(aid bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF aid IS NULL THEN RETURN; END IF;
  PERFORM pg_advisory_xact_lock({_LOCK_CLASS}, (aid % 2147483647)::integer);
  DELETE FROM {ENTRY} WHERE assignment_id = aid;
  INSERT INTO {ENTRY} ({ENTRY_COLUMNS}) {select};
END $$""",
        """CREATE FUNCTION progress_assignment_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'DELETE' THEN
    PERFORM 1 FROM annotations_item WHERE id = NEW.item_id FOR SHARE;
    PERFORM progress_rewrite(NEW.id);
  END IF;
  IF TG_OP <> 'INSERT' AND (TG_OP = 'DELETE' OR OLD.id <> NEW.id) THEN PERFORM progress_rewrite(OLD.id); END IF;
  RETURN NULL;
END $$""",
        f"""CREATE FUNCTION progress_post_edit_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE cell_key record;
BEGIN
  IF TG_OP = 'UPDATE' AND {_SAVED["postgresql"]} THEN
    PERFORM pg_advisory_xact_lock({_LOCK_CLASS}, (NEW.assignment_id % 2147483647)::integer);
    UPDATE {ENTRY} SET moment = NEW.updated
      WHERE assignment_id = NEW.assignment_id AND (moment IS NULL OR moment < NEW.updated)
      RETURNING {", ".join(CELL_KEY)} INTO cell_key;
    IF FOUND THEN
      UPDATE {CELL} SET latest = GREATEST(latest, NEW.updated)
        WHERE {" AND ".join(f"{column} = cell_key.{column}" for column in CELL_KEY)};
    END IF;
    RETURN NULL;
  END IF;
  IF TG_OP <> 'DELETE' THEN PERFORM progress_rewrite(NEW.assignment_id); END IF;
  IF TG_OP <> 'INSERT' AND (TG_OP = 'DELETE' OR OLD.assignment_id <> NEW.assignment_id) THEN
    PERFORM progress_rewrite(OLD.assignment_id);
  END IF;
  RETURN NULL;
END $$""",
        """CREATE FUNCTION progress_item_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE aid bigint;
BEGIN
  FOR aid IN SELECT id FROM annotations_assignment WHERE item_id IN (OLD.id, NEW.id) ORDER BY id LOOP
    PERFORM progress_rewrite(aid);
  END LOOP;
  RETURN NULL;
END $$""",
        f"""CREATE FUNCTION progress_project_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {ENTRY} WHERE project_id = OLD.id;
  DELETE FROM {CELL} WHERE project_id = OLD.id;
  RETURN NULL;
END $$""",
        "CREATE TRIGGER progress_assignment AFTER INSERT OR DELETE OR UPDATE OF "
        f"{ASSIGNMENT_COLUMNS} ON annotations_assignment FOR EACH ROW EXECUTE FUNCTION progress_assignment_changed()",
        "CREATE TRIGGER progress_post_edit AFTER INSERT OR DELETE OR UPDATE OF "
        f"{POST_EDIT_COLUMNS} ON annotations_postedit FOR EACH ROW EXECUTE FUNCTION progress_post_edit_changed()",
        "CREATE TRIGGER progress_item AFTER UPDATE OF id, project_id, batch_id ON annotations_item "
        "FOR EACH ROW EXECUTE FUNCTION progress_item_changed()",
        "CREATE TRIGGER progress_project AFTER DELETE ON annotations_project "
        "FOR EACH ROW EXECUTE FUNCTION progress_project_deleted()",
    ]


def postgresql_entry_triggers() -> list[str]:
    lock = " AND ".join(f"{column} = OLD.{column}" for column in CELL_KEY)
    return [
        f"""CREATE FUNCTION progress_entry_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    {_cell_in("postgresql")};
  ELSE
    PERFORM 1 FROM {CELL} WHERE {lock} FOR UPDATE;
    {_cell_out()};
  END IF;
  RETURN NULL;
END $$""",
        f"CREATE TRIGGER progress_entry AFTER INSERT OR DELETE ON {ENTRY} "
        "FOR EACH ROW EXECUTE FUNCTION progress_entry_changed()",
    ]


def _fill(vendor: str) -> list[str]:
    """Every first-pass assignment's entry, then the cells grouped from them (before the entries' triggers)."""
    return [
        f"INSERT INTO {ENTRY} ({ENTRY_COLUMNS}) {_ENTRY_SELECT[vendor].format(where='1 = 1')}",
        f"INSERT INTO {CELL} ({_CELL_COLUMNS}) SELECT {', '.join(CELL_KEY)}, COUNT(*), "
        f"COALESCE(SUM(uncorroborated), 0), SUM({_TIMED.format(row=ENTRY)}), MAX(moment) "
        f"FROM {ENTRY} GROUP BY {', '.join(CELL_KEY)}",
    ]


def install_statements(vendor: str) -> list[str]:
    """The triggers of the base tables first (on PostgreSQL their creation locks the tables against writes
    until the migration commits), the entries and cells filled, then the entries' triggers."""
    if vendor == "sqlite":
        return [*sqlite_triggers(), *_fill(vendor), *sqlite_entry_triggers()]
    if vendor == "postgresql":
        return [*postgresql_triggers(), *_fill(vendor), *postgresql_entry_triggers()]
    raise NotImplementedError(f"the progress triggers are written for SQLite and PostgreSQL, not {vendor}")


def uninstall_statements(vendor: str) -> list[str]:
    if vendor == "sqlite":
        names = [
            "progress_assignment_insert",
            "progress_assignment_update",
            "progress_assignment_delete",
            "progress_post_edit_insert",
            "progress_post_edit_update",
            "progress_post_edit_saved",
            "progress_post_edit_delete",
            "progress_item_update",
            "progress_project_delete",
            "progress_entry_insert",
            "progress_entry_delete",
        ]
        return [f"DROP TRIGGER IF EXISTS {name}" for name in names] + [f"DELETE FROM {CELL}", f"DELETE FROM {ENTRY}"]
    triggers = [
        ("progress_assignment", "annotations_assignment"),
        ("progress_post_edit", "annotations_postedit"),
        ("progress_item", "annotations_item"),
        ("progress_project", "annotations_project"),
        ("progress_entry", ENTRY),
    ]
    functions = [
        "progress_entry_changed()",
        "progress_project_deleted()",
        "progress_item_changed()",
        "progress_post_edit_changed()",
        "progress_assignment_changed()",
        "progress_rewrite(bigint)",
    ]
    return (
        [f"DROP TRIGGER IF EXISTS {name} ON {table}" for name, table in triggers]
        + [f"DROP FUNCTION IF EXISTS {name}" for name in functions]
        + [f"DELETE FROM {CELL}", f"DELETE FROM {ENTRY}"]
    )
