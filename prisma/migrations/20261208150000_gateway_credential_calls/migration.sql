-- Each gateway leaf's credentials calls (server/gateway-credentials/): which serving CA the vouching leaf chains
-- to, its names, when it was last seen, and the leaf the API issued to replace it (a rotation). Retiring the
-- serving CA is refused while a leaf of the old CA was seen within a minute and its successor has not called
-- since. One row per leaf (an upsert per call); rows not seen for a day are swept.
CREATE TABLE "gateway_credential_calls" (
  "leaf_sha256" TEXT NOT NULL,
  "serving_ca_pin" TEXT NOT NULL,
  "names" TEXT[] NOT NULL,
  "first_seen" TIMESTAMPTZ(6) NOT NULL,
  "last_seen" TIMESTAMPTZ(6) NOT NULL,
  -- The leaf issued to replace this one (SHA-256 of its DER), when the API answered a new serving chain.
  "successor_sha256" TEXT,
  CONSTRAINT "gateway_credential_calls_pkey" PRIMARY KEY ("leaf_sha256")
);
CREATE INDEX "gateway_credential_calls_ca_last_seen" ON "gateway_credential_calls" ("serving_ca_pin", "last_seen");
CREATE INDEX "gateway_credential_calls_last_seen" ON "gateway_credential_calls" ("last_seen");
