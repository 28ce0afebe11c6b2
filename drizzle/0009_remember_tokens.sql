CREATE TABLE "remember_tokens" (
	"id" varchar(64) PRIMARY KEY NOT NULL,
	"user_id" bigint NOT NULL,
	"ip_address" varchar(45),
	"user_agent" text,
	"created_at" integer NOT NULL,
	"last_used_at" integer NOT NULL,
	"expires_at" integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "remember_token_id" varchar(64);--> statement-breakpoint
ALTER TABLE "remember_tokens" ADD CONSTRAINT "remember_tokens_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "remember_tokens_user_id_index" ON "remember_tokens" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "remember_tokens_expires_at_index" ON "remember_tokens" USING btree ("expires_at");--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_remember_token_id_remember_tokens_id_fk" FOREIGN KEY ("remember_token_id") REFERENCES "public"."remember_tokens"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "sessions_remember_token_id_index" ON "sessions" USING btree ("remember_token_id");