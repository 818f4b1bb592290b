-- The queue's search text, computed once when a request is written rather than on every search: at 10,000
-- pending requests, building it from the claims (jsonb) per row and query cost about 170 ms per search.
-- What a search reads, one line per request: the id, the vouched MAC (also as bare hex digits), the IP, the
-- hostname, serials, product UUID, claimed MACs and GPU UUIDs, vendor and model. Nothing secret.
ALTER TABLE "join_requests" ADD COLUMN "search_text" TEXT GENERATED ALWAYS AS (lower(
  "id" || ' ' || coalesce("mac", '') || ' ' || coalesce(replace("mac", ':', ''), '') || ' ' || coalesce("ip", '') || ' ' ||
  coalesce("claims"->>'hostname', '') || ' ' || coalesce("claims"->>'productSerial', '') || ' ' ||
  coalesce("claims"->>'boardSerial', '') || ' ' || coalesce("claims"->>'chassisSerial', '') || ' ' ||
  coalesce("claims"->>'productUuid', '') || ' ' || coalesce(("claims"->'macs')::text, '') || ' ' ||
  coalesce(("claims"->'gpuUuids')::text, '') || ' ' || coalesce("claims"->>'sysVendor', '') || ' ' ||
  coalesce("claims"->>'productName', '')
)) STORED;
