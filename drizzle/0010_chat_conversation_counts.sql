ALTER TABLE "chat_group_members" ADD COLUMN "read_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "chat_groups" ADD COLUMN "conversation_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
UPDATE "chat_groups" g SET "conversation_count" = (SELECT count(*) FROM "chat_messages" m WHERE m."group_id" = g."id" AND m."kind" <> 'system');--> statement-breakpoint
UPDATE "chat_group_members" m SET "read_count" = greatest(g."conversation_count" - m."unread_count", 0) FROM "chat_groups" g WHERE g."id" = m."group_id";--> statement-breakpoint
ALTER TABLE "chat_group_members" ADD CONSTRAINT "chat_group_members_read_count_non_negative" CHECK ("chat_group_members"."read_count" >= 0);--> statement-breakpoint
ALTER TABLE "chat_groups" ADD CONSTRAINT "chat_groups_conversation_count_non_negative" CHECK ("chat_groups"."conversation_count" >= 0);