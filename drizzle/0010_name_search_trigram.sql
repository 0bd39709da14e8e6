-- Issue 18: "name contains" searches (images by original name; the admin's users by name, username or email) read a
-- trigram index instead of scanning the account. pg_trgm ships with PostgreSQL's contrib (the embedded server has it)
-- and is a trusted extension (the database's owner may create it). Where it cannot be created (a server without
-- contrib, a role without CREATE on the database), the search still works, by a scan: the migration does not fail.
DO $$
BEGIN
  BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
  EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_trgm is not available (%): name searches scan instead of using an index', SQLERRM;
    RETURN;
  END;
  CREATE INDEX IF NOT EXISTS images_origin_name_trgm_idx ON images USING gin (origin_name gin_trgm_ops);
  CREATE INDEX IF NOT EXISTS users_username_trgm_idx ON users USING gin (username gin_trgm_ops);
  CREATE INDEX IF NOT EXISTS users_name_trgm_idx ON users USING gin (name gin_trgm_ops);
  CREATE INDEX IF NOT EXISTS users_email_trgm_idx ON users USING gin (email gin_trgm_ops);
END $$;
