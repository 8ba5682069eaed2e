import assert from "node:assert/strict";
import { test } from "node:test";

import { NousMemoryClient, NousMemoryError } from "../src/index.js";
import { agent, client, url } from "./env.js";

const A = agent("client");

test("health and readiness", async () => {
  assert.equal((await client.health()).status, "ok");
  assert.equal((await client.ready()).status, "ready");
});

test("remember, get, update, list, history and delete a memory", async () => {
  const made = await client.remember(A, {
    kind: "fact", content: "The staging cluster runs PostgreSQL 16", subject: "staging",
  });
  assert.equal(made.kind, "fact");
  assert.equal((await client.get(A, made.id)).summary, "The staging cluster runs PostgreSQL 16");
  const changed = await client.update(A, made.id, { importance: 0.9, tags: ["infra"] });
  assert.equal(changed.importance, 0.9);
  const page = await client.list(A, { tag: "infra" });
  assert.deepEqual(page.items.map((m) => m.id), [made.id]);
  const events = await client.history(A, made.id);
  assert.deepEqual(events.map((e) => e.event), ["created", "updated"]);
  await client.delete(A, made.id);
  await assert.rejects(client.get(A, made.id), (err: unknown) =>
    err instanceof NousMemoryError && err.status === 404);
  const back = await client.restore(A, made.id);
  assert.equal(back.restored_from, "deleted");
});

test("a bad value is a typed error naming the field", async () => {
  await assert.rejects(client.learnFact(A, "The sky is green", { confidence: 7 }),
    (err: unknown) => {
    assert.ok(err instanceof NousMemoryError);
    assert.equal(err.status, 422);
    assert.deepEqual(err.problems.map((p) => p.field), ["confidence"]);
    return true;
  });
});

test("a wrong key is refused, and another agent is out of the key's reach", async () => {
  const stranger = new NousMemoryClient({ url, apiKey: "not-a-key-0123456789abcdef" });
  await assert.rejects(stranger.list(A), (err: unknown) =>
    err instanceof NousMemoryError && err.status === 401);
  await assert.rejects(client.list("not-this-keys-agent"), (err: unknown) =>
    err instanceof NousMemoryError && err.status === 403);
});

test("facts, recall, context and expand", async () => {
  const learned = await client.learnFact(A, "Ana's team offsite is in Lisbon in May",
    { subject: "offsite", confidence: 0.9 });
  assert.equal(learned.action, "created");
  const again = await client.learnFact(A, "Ana's team offsite is in Lisbon in May");
  assert.equal(again.action, "confirmed");
  const history = await client.factHistory(A, learned.fact!.id);
  assert.deepEqual(history.chain.map((m) => m.id), [learned.fact!.id]);
  const found = await client.recall(A, "where is the offsite?", { k: 3 });
  assert.equal(found.items[0]!.memory_id, learned.fact!.id);
  const context = await client.assembleContext(A, "where is the offsite?",
    { budget_tokens: 400 });
  assert.ok(context.text.includes("Lisbon"));
  assert.ok(context.tokens_used <= 400);
  const expanded = await client.expand(A, context.items[0]!.ref);
  assert.equal(expanded.memory.id, learned.fact!.id);
});

test("what is true now: a value said later supersedes, old ones left out, plans ahead",
  async () => {
    const B = agent("now");
    await client.learnFact(B, "The user lives in Lisbon.", { valid_from: "2024-01-10T10:00:00Z" });
    const moved = await client.learnFact(B, "The user moved to Porto.",
      { valid_from: "2024-05-20T10:00:00Z" });
    assert.equal(moved.action, "superseded");
    const clean = await client.assembleContext(B, "Where do I live?",
      { current_only: true, as_of: "2024-07-01T00:00:00Z" });
    assert.ok(clean.text.includes("Porto") && !clean.text.includes("Lisbon"));
    await client.learnFact(B, "The user's dentist appointment is on 8 July at 3pm.",
      { valid_from: "2024-07-01T10:00:00Z" });
    const plans = await client.upcoming(B, { days: 14, asOf: "2024-07-02T00:00:00Z" });
    assert.deepEqual(plans.events.map((e) => e.event_at), ["2024-07-08T15:00:00Z"]);
  });

test("an episode: start, append, transcript, working memory, close", async () => {
  const episode = await client.startEpisode(A, { title: "Planning", participants: ["Ana"] });
  const appended = await client.append(A, episode.id, [
    { role: "user", name: "Ana", content: "Let's plan the offsite." },
    { role: "assistant", content: "Where would you like to go?", metadata: { turn: 2 } },
  ]);
  assert.deepEqual([appended.first_seq, appended.last_seq], [0, 1]);
  const messages = await client.transcript(A, episode.id);
  assert.deepEqual(messages.map((m) => m.content),
    ["Let's plan the offsite.", "Where would you like to go?"]);
  assert.deepEqual(messages[1]!.metadata, { turn: 2 });
  const newest = await client.latestMessages(A, episode.id, 1);
  assert.deepEqual(newest.map((m) => m.seq), [1]);
  const prompt = await client.buildPrompt(A, episode.id,
    { system: "You plan trips.", budget_tokens: 2000 });
  assert.ok(prompt.tokens <= 2000);
  assert.equal(prompt.messages[0]!.role, "system");
  const policy = await client.setConversationPolicy(A, { protect_tail: 4 });
  assert.equal(policy.protect_tail, 4);
  assert.equal((await client.conversationPolicy(A)).protect_tail, 4);
  const pass = await client.summarizeConversation(A, episode.id, { force: true });
  assert.equal(pass.summary.episode_id, episode.id);
  assert.equal((await client.conversationSummary(A, episode.id)).episode_id, episode.id);
  assert.equal((await client.summaryHistory(A, episode.id)).episode_id, episode.id);
  const edit = await client.editMessage(A, episode.id, 0, "Let's plan the Lisbon offsite.");
  assert.equal(edit.action, "edited");
  assert.equal((await client.deleteMessage(A, episode.id, 1)).action, "deleted");
  const redacted = await client.forgetMessage(A, episode.id, 0, ["Lisbon"]);
  assert.equal(redacted.action, "redacted");
  assert.equal((await client.transcript(A, episode.id))[0]!.content,
    "Let's plan the [redacted] offsite.");
  const closing = await client.closeEpisode(A, episode.id);
  assert.equal(closing.kind, "episode");
  assert.equal((await client.getEpisode(A, episode.id)).id, episode.id);
  assert.deepEqual(await client.factsFromEpisode(A, episode.id), []);
});

test("history import, export, import and forget an agent", async () => {
  const source = agent("export");
  const imported = await client.ingest(source, [{
    key: "s1", started_at: "2025-03-01T09:00:00Z",
    turns: [{ role: "user", content: "My sister Mia lives in Porto." },
            { role: "assistant", content: "Noted." }],
  }]);
  assert.equal(imported.sessions_imported, 1);
  assert.equal((await client.ingestStatus(source)).agent_id, source);
  const chunks: Uint8Array[] = [];
  for await (const chunk of await client.exportAgent(source)) {
    chunks.push(chunk);
  }
  const file = Buffer.concat(chunks);
  assert.ok(file.toString("utf8").split("\n").length > 2);
  const target = agent("import");
  const summary = await client.importAgent(target, file);
  assert.equal(summary.source_agent_id, source);
  assert.ok(summary.rows > 0);
  const episodes = await client.list(target, { kind: "episode" });
  assert.deepEqual(episodes.items.map((m) => m.id), imported.episode_ids);
  const receipt = await client.forgetAgent(source);
  assert.ok(receipt.total_rows > 0);
});
