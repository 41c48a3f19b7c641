-- Errors are clean and leave the session usable.
\set VERBOSITY sqlstate
SELECT treeshap.load_model('bad', convert_to('{"learner": 3}', 'UTF8'));
SELECT treeshap.load_model('bad', '\x00010203'::bytea);
SELECT treeshap.load_model('bad', convert_to('{"learner": {"learner_model_param": {"num_feature": "1e12", "base_score": "0.5"}}}', 'UTF8'));
SELECT * FROM treeshap.explain_shap_wide('missing', 'SELECT 1, 2');
SELECT treeshap.shap_values('missing', ARRAY[1.0]);
\set VERBOSITY default
SELECT treeshap.load_model('bad', convert_to('{"learner": 3}', 'UTF8'));
SELECT count(*) AS models_stored FROM treeshap.models;
SET treeshap.device = bogus;
RESET treeshap.device;
SELECT 'still alive' AS session;
