CREATE TABLE "imported_records" (
	"source" text NOT NULL,
	"kind" text NOT NULL,
	"source_id" bigint NOT NULL,
	"target_id" bigint NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "imported_records_source_kind_source_id_pk" PRIMARY KEY("source","kind","source_id"),
	CONSTRAINT "imported_records_kind_check" CHECK ("imported_records"."kind" in ('strategy', 'group', 'user', 'album', 'image', 'token'))
);
