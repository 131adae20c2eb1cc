"""Helpers of memoryhub/infra/db.py that need no database."""

from memoryhub.store._rows import compact_sql


def test_compact_sql_drops_comments_and_runs_of_whitespace() -> None:
    sql = """
    WITH a AS (  -- a comment, with a ' quote
        SELECT 1 AS x
    )
    SELECT x FROM a WHERE x <> '-Infinity'::float8  -- trailing
    """
    assert compact_sql(sql) == "WITH a AS ( SELECT 1 AS x ) SELECT x FROM a WHERE x <> '-Infinity'::float8"
