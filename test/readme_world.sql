-- The objects the README's examples name, for test/readme_check.sh (run from the
-- project root, in the database pg_cron serves): the models of
-- test/fixtures/readme/ (make_readme_models.py) and tables over the ranges they were
-- trained on. 'california' is not loaded here: the README's first example loads it.
CREATE EXTENSION pgtap;
CREATE EXTENSION pg_treeshap;

\set churn `cat test/fixtures/readme/churn.json`
\set credit `cat test/fixtures/readme/credit.json`
\set candidate `cat test/fixtures/readme/credit_candidate.json`
\set income `cat test/fixtures/readme/income.json`
SELECT 1 FROM treeshap.load_model('churn', convert_to(:'churn', 'UTF8'));
SELECT 1 FROM treeshap.load_model('credit', convert_to(:'credit', 'UTF8'));
SELECT 1 FROM treeshap.load_model('credit_model', convert_to(:'credit', 'UTF8'));
SELECT 1 FROM treeshap.load_model('credit_model_candidate', convert_to(:'candidate', 'UTF8'));
SELECT 1 FROM treeshap.load_model('income', convert_to(:'income', 'UTF8'));

-- the demo's houses: id and the California-housing model's eight features
\i test/houses.sql

CREATE TABLE customers AS
SELECT id::bigint AS id,
       (ARRAY['north', 'south', 'east', 'west'])[1 + id % 4] AS region,
       date '2025-01-01' + (id * 13) % 600 AS signup,
       18 + (id * 37) % 60 AS age,
       (id * 53) % 72 AS tenure_months,
       20 + ((id * 29) % 1000) / 10.0 AS monthly_charges,
       (id * 7) % 6 AS support_calls
  FROM generate_series(1, 1000) AS id;
ALTER TABLE customers ADD PRIMARY KEY (id);
CREATE VIEW customers_by_month AS
SELECT date_trunc('month', signup)::date AS month, * FROM customers;

-- a twentieth of the applications arrive today; the others over 2025 and 2026
CREATE TABLE applications AS
SELECT id::bigint AS id, day, extract(year FROM day)::int AS year,
       (id * 31) % 10 < 6 AS approved,
       20000 + (id * 7919) % 180000 AS income,
       ((id * 17) % 100) / 100.0 AS debt_ratio,
       21 + (id * 11) % 55 AS age,
       (id * 5) % 6 AS late_payments,
       1 + (id * 3) % 15 AS credit_lines
  FROM generate_series(1, 2000) AS id,
       LATERAL (SELECT CASE WHEN id % 20 = 0 THEN current_date
                            ELSE date '2025-01-01' + id % 640 END AS day) d;
ALTER TABLE applications ADD PRIMARY KEY (id);
CREATE TABLE holdout_applications AS SELECT * FROM applications WHERE id % 5 = 0;

CREATE TABLE people (id bigint PRIMARY KEY, age int, hours_per_week int,
                     workclass text, education text);
\copy people FROM 'test/fixtures/readme/people.csv' CSV HEADER
