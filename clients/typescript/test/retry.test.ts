import assert from "node:assert/strict";
import { test } from "node:test";

import { NousMemoryClient, NousMemoryError } from "../src/index.js";
import { apiKey, agent, url } from "./env.js";

// The service's database refuses this agent's first and third memory writes as a
// deadlock's victim would be (a trigger the Python side of the test installs): 409 with
// Retry-After, nothing written.
const A = agent("retry");

test("a call that lost to another transaction is sent again", async () => {
  const client = new NousMemoryClient({ url, apiKey });
  const made = await client.remember(A, { kind: "fact", content: "Ines plays the cello" });
  assert.equal(made.summary, "Ines plays the cello");
  assert.equal((await client.list(A)).items.length, 1);
});

test("with retry off, the lost call is an error saying so", async () => {
  const client = new NousMemoryClient({ url, apiKey, retry: false });
  await assert.rejects(client.remember(A, { kind: "fact", content: "Ines plays the viola" }),
    (err: unknown) => err instanceof NousMemoryError && err.status === 409);
  assert.equal((await client.list(A)).items.length, 1);
});

test("retry options are checked", () => {
  assert.throws(() => new NousMemoryClient({ url, apiKey, retry: { maxAttempts: 0 } }),
    RangeError);
});
