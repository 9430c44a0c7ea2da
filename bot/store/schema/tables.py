"""Every table of the current schema, declared once for both engines (see `ddl` for the types).

The declaration is in two parts: `operator_tables` (shared on purpose, referencing nothing)
and `community_tables` (every row in a space). Tables are in dependency order (each after the
tables it references; checked on import), which is also the order `migrate-db` copies them
in. Columns are in the order the migrations left them (a column added later is last).
Something added after BASELINE_VERSION carries `since=<its version>`; the migration of that
version derives its steps from it (`bot.store.schema.migrations`).
"""

from __future__ import annotations

from typing import Final

from bot.store.schema.community_tables import COMMUNITY_TABLES
from bot.store.schema.ddl import Table, dependency_order
from bot.store.schema.operator_tables import OPERATOR_TABLES

# The first version rendered from the declaration: PostgreSQL databases start there (SQLite
# files older than it upgrade through the history steps).
BASELINE_VERSION: Final = 4

TABLES: Final[tuple[Table, ...]] = (*OPERATOR_TABLES, *COMMUNITY_TABLES)
TABLE_ORDER: Final = tuple(dependency_order(TABLES))
# The tables whose every row is in a space (a `space_id` column), in declaration order: what a
# space's purge empties and every query on them must filter on (tests/store/test_space_scoping).
SPACE_TABLES: Final[tuple[str, ...]] = tuple(
    table.name for table in TABLES if any(column.name == "space_id" for column in table.columns)
)
