CREATE TABLE "pending_removals" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"strategy_id" integer NOT NULL,
	"path" text NOT NULL,
	"reason" text NOT NULL,
	"due_at" timestamp with time zone DEFAULT now() NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "pending_removals" ADD CONSTRAINT "pending_removals_strategy_id_strategies_id_fk" FOREIGN KEY ("strategy_id") REFERENCES "public"."strategies"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "pending_removals_due_idx" ON "pending_removals" USING btree ("due_at");--> statement-breakpoint
CREATE INDEX "pending_removals_strategy_path_idx" ON "pending_removals" USING btree ("strategy_id","path");--> statement-breakpoint
-- An upload whose objects were planned as pending removals (their lease): first takes those rows back, in the
-- transaction that records the image, then records it exactly as record_upload does. Fewer rows than planned
-- means the lease lapsed and a removal worker took (and removed) the objects: IHLSE, and nothing is recorded.
-- A worker holding a row (FOR UPDATE) makes the DELETE wait for its commit, so the count is decided.
CREATE OR REPLACE FUNCTION record_leased_upload(
  p_pending_ids bigint[],
  p_user_id integer,
  p_default_capacity_kb integer,
  p_strategy_id integer,
  p_size bigint,
  p_subject text,
  p_now timestamptz,
  p_per_minute integer,
  p_per_hour integer,
  p_per_day integer,
  p_per_week integer,
  p_per_month integer,
  p_key text,
  p_album_id integer,
  p_path text,
  p_thumbnail_path text,
  p_name text,
  p_origin_name text,
  p_mimetype text,
  p_extension text,
  p_width integer,
  p_height integer,
  p_md5 text,
  p_sha1 text,
  p_is_public boolean,
  p_expired_at timestamptz,
  p_uploader_ip text
) RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
  taken integer;
BEGIN
  DELETE FROM pending_removals WHERE id = ANY(p_pending_ids) AND reason = 'upload';
  GET DIAGNOSTICS taken = ROW_COUNT;
  IF taken <> coalesce(cardinality(p_pending_ids), 0) THEN
    RAISE EXCEPTION USING ERRCODE = 'IHLSE', MESSAGE = 'The upload''s lease lapsed before it was recorded.';
  END IF;
  RETURN record_upload(p_user_id, p_default_capacity_kb, p_strategy_id, p_size, p_subject, p_now, p_per_minute,
    p_per_hour, p_per_day, p_per_week, p_per_month, p_key, p_album_id, p_path, p_thumbnail_path, p_name, p_origin_name,
    p_mimetype, p_extension, p_width, p_height, p_md5, p_sha1, p_is_public, p_expired_at, p_uploader_ip);
END;
$$;
