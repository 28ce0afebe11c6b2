CREATE TABLE "knowledge_base_sync" (
	"id" smallint PRIMARY KEY DEFAULT 1 NOT NULL,
	"content_hash" varchar(64) NOT NULL,
	"synced_at" timestamp (6) with time zone NOT NULL,
	CONSTRAINT "knowledge_base_sync_one_row" CHECK ("knowledge_base_sync"."id" = 1)
);
