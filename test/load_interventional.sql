-- Load fixture :f's interventional references (test/fixtures/make_interventional.py)
-- into iv_expected, made by t20_interventional.sql.
\set rows `cat test/fixtures/:f.interventional.csv`
INSERT INTO iv_expected
SELECT :'f', p[1]::bigint, p[2]::int, p[3], p[4]::float8, p[5]::float8[]
  FROM (SELECT regexp_match(l, '^(\d+),(\d+),(\w+),([^,]+),"?([^"]*)"?$') AS p
          FROM regexp_split_to_table(:'rows', '\r?\n') AS l) s
 WHERE p IS NOT NULL;
