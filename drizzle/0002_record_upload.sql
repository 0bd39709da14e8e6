-- Records an accepted upload in one statement, so that it costs one round trip: re-checks the subject's
-- upload frequency under a lock (when the group has limits), charges the owner's capacity, inserts the image,
-- logs the upload and charges the strategy's quota, the shared strategy row last so it is held only until the
-- end of the statement. A refusal raises IHFRQ (frequency), IHCAP (capacity) or IHQTA (quota) and undoes all.
CREATE OR REPLACE FUNCTION record_upload(
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
  c_minute integer;
  c_hour integer;
  c_day integer;
  c_week integer;
  c_month integer;
  new_id bigint;
BEGIN
  IF coalesce(p_per_minute, p_per_hour, p_per_day, p_per_week, p_per_month) IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtext('freq:' || p_subject));
    SELECT count(*) FILTER (WHERE created_at > p_now - interval '60 seconds'),
           count(*) FILTER (WHERE created_at > p_now - interval '3600 seconds'),
           count(*) FILTER (WHERE created_at > p_now - interval '86400 seconds'),
           count(*) FILTER (WHERE created_at > p_now - interval '604800 seconds'),
           count(*)
      INTO c_minute, c_hour, c_day, c_week, c_month
      FROM upload_log
     WHERE subject = p_subject AND created_at > p_now - interval '2592000 seconds';
    IF c_minute >= p_per_minute THEN
      RAISE EXCEPTION USING ERRCODE = 'IHFRQ', MESSAGE = format('Upload frequency limit reached: at most %s uploads per minute.', p_per_minute);
    ELSIF c_hour >= p_per_hour THEN
      RAISE EXCEPTION USING ERRCODE = 'IHFRQ', MESSAGE = format('Upload frequency limit reached: at most %s uploads per hour.', p_per_hour);
    ELSIF c_day >= p_per_day THEN
      RAISE EXCEPTION USING ERRCODE = 'IHFRQ', MESSAGE = format('Upload frequency limit reached: at most %s uploads per day.', p_per_day);
    ELSIF c_week >= p_per_week THEN
      RAISE EXCEPTION USING ERRCODE = 'IHFRQ', MESSAGE = format('Upload frequency limit reached: at most %s uploads per week.', p_per_week);
    ELSIF c_month >= p_per_month THEN
      RAISE EXCEPTION USING ERRCODE = 'IHFRQ', MESSAGE = format('Upload frequency limit reached: at most %s uploads per month.', p_per_month);
    END IF;
  END IF;

  IF p_user_id IS NOT NULL THEN
    UPDATE users
       SET used_bytes = used_bytes + p_size, image_num = image_num + 1
     WHERE id = p_user_id AND used_bytes + p_size <= coalesce(capacity_kb, p_default_capacity_kb)::bigint * 1024;
    IF NOT FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'IHCAP', MESSAGE = 'Insufficient capacity.';
    END IF;
  END IF;

  INSERT INTO images (key, user_id, album_id, strategy_id, path, thumbnail_path, name, origin_name, size, mimetype,
                      extension, width, height, md5, sha1, is_public, expired_at, uploader_ip, created_at)
  VALUES (p_key, p_user_id, p_album_id, p_strategy_id, p_path, p_thumbnail_path, p_name, p_origin_name, p_size, p_mimetype,
          p_extension, p_width, p_height, p_md5, p_sha1, p_is_public, p_expired_at, p_uploader_ip, p_now)
  RETURNING id INTO new_id;

  INSERT INTO upload_log (subject, created_at) VALUES (p_subject, p_now);

  UPDATE strategies
     SET used_bytes = used_bytes + p_size
   WHERE id = p_strategy_id AND (quota_kb IS NULL OR used_bytes + p_size <= quota_kb::bigint * 1024);
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'IHQTA', MESSAGE = 'quota';
  END IF;

  RETURN new_id;
END;
$$;
