-- Issue 18: the Albums page reads each album's number of images from the album instead of counting its images (7 ms
-- of database for an account of 100,000 images on every view). Triggers on images keep it, so that every path that
-- adds, moves or removes an image (upload, move, delete, expiry, an account's deletion, an album's deletion setting
-- album_id to null, a restore's COPY) counts, whoever wrote it. Functions are PL/pgSQL with nested IFs: OLD and NEW
-- are read only where the operation has them.
ALTER TABLE "albums" ADD COLUMN "image_num" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
UPDATE "albums" AS a SET "image_num" = c.n
FROM (SELECT "album_id", count(*)::int AS n FROM "images" WHERE "album_id" IS NOT NULL GROUP BY "album_id") AS c
WHERE c."album_id" = a."id";--> statement-breakpoint
CREATE OR REPLACE FUNCTION albums_count_images() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE albums SET image_num = image_num + 1 WHERE id = NEW.album_id;
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE albums SET image_num = image_num - 1 WHERE id = OLD.album_id;
  ELSE
    IF OLD.album_id IS NOT NULL THEN
      UPDATE albums SET image_num = image_num - 1 WHERE id = OLD.album_id;
    END IF;
    IF NEW.album_id IS NOT NULL THEN
      UPDATE albums SET image_num = image_num + 1 WHERE id = NEW.album_id;
    END IF;
  END IF;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER images_album_count_insert AFTER INSERT ON "images"
  FOR EACH ROW WHEN (NEW.album_id IS NOT NULL) EXECUTE FUNCTION albums_count_images();--> statement-breakpoint
CREATE TRIGGER images_album_count_delete AFTER DELETE ON "images"
  FOR EACH ROW WHEN (OLD.album_id IS NOT NULL) EXECUTE FUNCTION albums_count_images();--> statement-breakpoint
CREATE TRIGGER images_album_count_move AFTER UPDATE OF "album_id" ON "images"
  FOR EACH ROW WHEN (OLD.album_id IS DISTINCT FROM NEW.album_id) EXECUTE FUNCTION albums_count_images();
