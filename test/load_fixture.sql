-- Load fixture :f (model, rows, the library's reference) into the model
-- catalog and the temp tables made by setup.sql. The model is NAME.json,
-- NAME.ubj, NAME.txt or NAME.tl (read as base64: UBJSON and Treelite are binary). Paths are
-- relative to the project root. A fixture without NAME.expected.csv (no
-- path-dependent reference: tl_nocover) loads its model and rows only.
\set model `base64 -w0 $(ls test/fixtures/:f.json test/fixtures/:f.ubj test/fixtures/:f.txt test/fixtures/:f.tl 2>/dev/null)`
SELECT 1 FROM treeshap.load_model(:'f', decode(:'model', 'base64'), replace => true) \g /dev/null
\set rows `cat test/fixtures/:f.data.csv`
INSERT INTO fx_data
SELECT :'f', p[1]::bigint, p[2]::float8[]
  FROM (SELECT regexp_match(l, '^(\d+),"?([^"]*)"?$') AS p
          FROM regexp_split_to_table(:'rows', '\r?\n') AS l) s;
\set expected `cat test/fixtures/:f.expected.csv 2>/dev/null`
INSERT INTO fx_expected
SELECT :'f', p[1]::bigint, p[2]::int, p[3]::float8, p[4]::float8[]
  FROM (SELECT regexp_match(l, '^(\d+),(\d+),([^,]+),"?([^"]*)"?$') AS p
          FROM regexp_split_to_table(:'expected', '\r?\n') AS l) s
 WHERE p IS NOT NULL;
