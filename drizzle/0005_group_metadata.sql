-- Issue 17 §1: the metadata policy of a group (keep | strip_location | strip_all). The DEFAULT fills the column for
-- the groups an install already has: they strip locations from now on (privacy by default), like new groups.
ALTER TABLE "groups" ADD COLUMN "metadata" text DEFAULT 'strip_location' NOT NULL;--> statement-breakpoint
ALTER TABLE "groups" ADD CONSTRAINT "groups_metadata_check" CHECK ("groups"."metadata" in ('keep', 'strip_location', 'strip_all'));