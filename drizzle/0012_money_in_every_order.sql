CREATE TABLE "deferred_payment_events" (
	"id" varchar(255) PRIMARY KEY NOT NULL,
	"type" varchar(128) NOT NULL,
	"payment_intent_id" varchar(255) NOT NULL,
	"event" jsonb NOT NULL,
	"event_created_at" timestamp (6) with time zone NOT NULL,
	"created_at" timestamp (6) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "credit_transactions" DROP CONSTRAINT "credit_transactions_balance_after_non_negative";--> statement-breakpoint
ALTER TABLE "credit_accounts" DROP CONSTRAINT "credit_accounts_user_id_users_id_fk";
--> statement-breakpoint
ALTER TABLE "credit_holds" DROP CONSTRAINT "credit_holds_user_id_users_id_fk";
--> statement-breakpoint
ALTER TABLE "credit_purchases" DROP CONSTRAINT "credit_purchases_user_id_users_id_fk";
--> statement-breakpoint
ALTER TABLE "credit_transactions" DROP CONSTRAINT "credit_transactions_user_id_users_id_fk";
--> statement-breakpoint
CREATE INDEX "deferred_payment_events_payment_intent_index" ON "deferred_payment_events" USING btree ("payment_intent_id","event_created_at");--> statement-breakpoint
ALTER TABLE "credit_transactions" ADD CONSTRAINT "credit_transactions_balance_after_non_negative" CHECK ("credit_transactions"."balance_after" >= 0 or "credit_transactions"."amount" > 0 or "credit_transactions"."kind" in ('refund', 'dispute_withheld', 'hold_capture', 'feature_use'));--> statement-breakpoint
-- A won dispute now keeps no withheld credits on its purchase (its dispute_returned rows gave them back).
UPDATE "credit_purchases" SET "credits_disputed" = 0 WHERE "dispute_status" = 'won';
