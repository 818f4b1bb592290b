-- Every certificate certifies a key made for it. A key certified twice means a replayed join request,
-- so the database refuses it even when two replays race.
CREATE UNIQUE INDEX "node_certs_spki_sha256_key" ON "node_certs" ("spki_sha256");
