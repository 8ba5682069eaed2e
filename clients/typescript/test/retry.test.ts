import assert from "node:assert/strict";
import { test } from "node:test";

import { NousMemoryClient, NousMemoryError } from "../src/index.js";
import { sendAgain } from "../src/retry.js";
import { apiKey, agent, url } from "./env.js";

// The service's database refuses this agent's first, third and fourth memory writes as
// a deadlock's victim would be (a trigger the Python side of the test installs): 409
// with Retry-After, nothing written.
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

test("aborting a call ends its wait to be sent again", async () => {
  const client = new NousMemoryClient({ url, apiKey });
  const controller = new AbortController();
  const started = Date.now();
  setTimeout(() => controller.abort(), 100);
  await assert.rejects(client.api.POST("/agents/{agent_id}/memories", {
    params: { path: { agent_id: A } }, body: { kind: "fact", content: "Ines plays the harp" },
    signal: controller.signal,
  }), (err: unknown) => err instanceof Error && err.name === "AbortError");
  // the service asked for a second (Retry-After: 1): the wait was cut short
  assert.ok(Date.now() - started < 450, `${Date.now() - started} ms`);
  assert.equal((await client.list(A)).items.length, 1);
});

test("a 5xx is answered by sending again only a call that does the same twice", () => {
  const base = "http://127.0.0.1:1/agents/a";
  const unavailable = new Response(null, { status: 503, headers: { "Retry-After": "1" } });
  const again = (method: string, path: string) =>
    sendAgain(new Request(`${base}${path}`, { method }), unavailable);
  assert.ok(again("GET", "/memories"));
  assert.ok(again("POST", "/recall"));
  assert.ok(again("POST", "/context"));
  assert.ok(again("POST", "/episodes/e1/close"));
  assert.ok(again("PUT", "/conversation-policy"));
  assert.ok(!again("POST", "/memories"));
  assert.ok(!again("POST", "/episodes/e1/messages"));
  assert.ok(!again("DELETE", "/memories/m1"));
  assert.ok(!again("DELETE", ""));
  assert.ok(!again("PATCH", "/memories/m1"));
  const conflict = new Response(null, { status: 409 });
  assert.ok(!sendAgain(new Request(`${base}/memories`, { method: "POST" }), conflict));
});
