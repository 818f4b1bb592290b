-- Labels an operator gives a node (`key=value`, protocol/api/labels.ts): set at admission from the token, rule,
-- expected machine or approval that admitted it, edited later. Never on the certificate, never authorization.
-- The GIN index answers the fleet view's label filters (`labels @> '{"rack":"c7"}'`).
ALTER TABLE nodes ADD COLUMN IF NOT EXISTS labels jsonb NOT NULL DEFAULT '{}'::jsonb;
CREATE INDEX IF NOT EXISTS nodes_labels_idx ON nodes USING gin (labels jsonb_path_ops);
