-- Issue 18: the user center's "public or private only" and "in no album" views read the newest first from an index.
CREATE INDEX "images_owner_visibility_created_idx" ON "images" USING btree ("user_id","is_public","created_at","id");--> statement-breakpoint
CREATE INDEX "images_owner_no_album_created_idx" ON "images" USING btree ("user_id","created_at","id") WHERE "images"."album_id" is null;