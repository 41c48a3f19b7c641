-- (The Makefile appends this to the fresh 0.2.0 script only; an update prints a
-- NOTICE instead: Citus replays the update on the workers, where a model_store
-- shared here would turn the update's own statements into distributed ones.)
-- On a Citus coordinator the models are shared from the start (the workers take
-- the extension from the coordinator and skip this).
DO $$
BEGIN
    -- nested: without Citus, citus_is_coordinator() does not exist to be called
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        IF pg_catalog.citus_is_coordinator() THEN
            PERFORM treeshap.citus_share_models();
        END IF;
    END IF;
END
$$;
