-- Issue 19: an event's deliveries are made in the transaction of the change it describes, by one call in the change's
-- own statement: one row per enabled endpoint that wants the event (site-wide, and the owner's) and one
-- graphile-worker job (`webhook_deliver`) each. No endpoint: nothing is written and no sequence number taken.
-- Before this, the statement added one `webhook_event` job that made the deliveries later, in a queue of its own
-- run one job at a time (so that an image's events got their deliveries in order): that job cost every event a
-- second fetch and completion, and the serial queue bounded delivery throughput. Deliveries made at the commit are in
-- order per subject by construction (an image's delete can only begin once its upload has committed).
-- PL/pgSQL, whose body is checked when called: graphile-worker's schema is installed after these migrations.
CREATE OR REPLACE FUNCTION webhook_enqueue(p_message_id text, p_type text, p_at text, p_owner integer, p_subject text, p_data jsonb)
RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_seq bigint;
  v_body text;
  v_made integer;
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM webhook_endpoints e
    WHERE e.enabled AND (e.owner_id IS NULL OR e.owner_id = p_owner) AND p_type = ANY(e.events)
  ) THEN
    RETURN 0;
  END IF;
  v_seq := nextval('webhook_event_seq');
  -- Standard Webhooks' {type, timestamp, data}; an account's event names its owner (read here, in the same snapshot)
  v_body := json_build_object(
    'type', p_type,
    'timestamp', p_at,
    'data', p_data || CASE WHEN p_owner IS NULL THEN '{}'::jsonb
                      ELSE jsonb_build_object('owner', (SELECT jsonb_build_object('id', u.id, 'username', u.username) FROM users u WHERE u.id = p_owner)) END
  )::text;
  WITH made AS (
    INSERT INTO webhook_deliveries (endpoint_id, message_id, seq, event_type, subject, body, next_attempt_at)
    SELECT e.id, p_message_id, v_seq, p_type, p_subject, v_body, now()
    FROM webhook_endpoints e
    WHERE e.enabled AND (e.owner_id IS NULL OR e.owner_id = p_owner) AND p_type = ANY(e.events)
    ON CONFLICT (endpoint_id, message_id) DO NOTHING
    RETURNING id
  )
  SELECT count(graphile_worker.add_job('webhook_deliver', json_build_object('id', made.id),
           job_key => 'webhook-delivery:' || made.id::text, max_attempts => 10))::int
  INTO v_made FROM made;
  RETURN v_made;
END $$;
