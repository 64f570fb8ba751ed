import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash, createHmac, randomBytes } from "node:crypto";
import { toHex } from "../dist/hash.js";
import { sha256 } from "../dist/sha256.js";
import { hmacSha256, md5 } from "../dist/hmac.js";

test("SHA-256, HMAC-SHA256 and MD5 agree with node:crypto on every length around the block boundaries", () => {
  for (let n = 0; n < 300; n++) {
    const data = randomBytes(n);
    assert.equal(toHex(sha256(data)), createHash("sha256").update(data).digest("hex"));
    assert.equal(toHex(md5(data)), createHash("md5").update(data).digest("hex"));
    const key = randomBytes(n % 100);
    assert.equal(toHex(hmacSha256(key, data)), createHmac("sha256", key).update(data).digest("hex"));
  }
});
