-- Webhooks scoped to their owners (docs/decisions/webhook-owner-scope.md):
-- 1. groups.webhook_allow_internal: WEBHOOK_ALLOW opens internal hosts to a user's own endpoints only where the
--    user's group has it (off by default); site-wide endpoints keep WEBHOOK_ALLOW as it is.
-- 2. A user endpoint's delivery log never shows what its receiver answered (a body, a redirect's target) nor what
--    a name resolved to: the texts already recorded are cut back to the status and our own words.
-- 3. webhook_deliveries.lease_until: a send in flight holds no queue job (docs/decisions/webhook-fairness.md); the
--    instance sending (or holding) a delivery keeps this ahead of now, and once it has passed, any instance queues
--    the delivery again (a crash mid-send). Not indexed: it is read among the pending deliveries only, and its
--    updates stay HOT.
-- 4. An event an endpoint wants while it is switched off is recorded for it as failed ("not sent: the endpoint was
--    switched off", no attempt, no job), so that its owner sees what it missed and can send it once it is on again.
ALTER TABLE "groups" ADD COLUMN "webhook_allow_internal" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD COLUMN "lease_until" timestamp with time zone;--> statement-breakpoint
UPDATE "webhook_deliveries" AS d SET "last_error" = CASE
    WHEN d."last_error" ~ '^answered \d+ \(redirect' THEN substring(d."last_error" from '^answered \d+') || ' (a redirect, not followed)'
    WHEN d."last_error" ~ '^answered \d+' THEN substring(d."last_error" from '^answered \d+')
    WHEN d."last_error" ~ '^refused: .*( address| resolved to )' THEN 'refused: the address is private or internal; webhooks can only be sent to public addresses'
    WHEN d."last_error" ~ '^failed: connected to ' THEN 'failed: connected to another address than the one checked'
    WHEN d."last_error" = 'not sent: the endpoint is disabled' THEN 'not sent: the endpoint was switched off'
    ELSE d."last_error" END
FROM "webhook_endpoints" AS e
WHERE e."id" = d."endpoint_id" AND e."owner_id" IS NOT NULL AND d."last_error" IS NOT NULL;--> statement-breakpoint
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
    WHERE (e.owner_id IS NULL OR e.owner_id = p_owner) AND p_type = ANY(e.events)
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
  -- an endpoint switched off gets the event in its log, failed and not sent: no attempt, no job
  WITH made AS (
    INSERT INTO webhook_deliveries (endpoint_id, message_id, seq, event_type, subject, body, status, next_attempt_at, last_error)
    SELECT e.id, p_message_id, v_seq, p_type, p_subject, v_body,
           CASE WHEN e.enabled THEN 'pending' ELSE 'failed' END,
           CASE WHEN e.enabled THEN now() END,
           CASE WHEN e.enabled THEN NULL ELSE 'not sent: the endpoint was switched off' END
    FROM webhook_endpoints e
    WHERE (e.owner_id IS NULL OR e.owner_id = p_owner) AND p_type = ANY(e.events)
    ON CONFLICT (endpoint_id, message_id) DO NOTHING
    RETURNING id, status
  )
  SELECT count(graphile_worker.add_job('webhook_deliver', json_build_object('id', made.id),
           job_key => 'webhook-delivery:' || made.id::text, max_attempts => 10))::int
  INTO v_made FROM made WHERE made.status = 'pending';
  RETURN v_made;
END $$;
