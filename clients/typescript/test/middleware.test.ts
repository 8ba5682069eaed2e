import assert from "node:assert/strict";
import { test } from "node:test";

import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, jsonSchema, stepCountIs, streamText, tool, wrapLanguageModel } from "ai";

import { nousMemory, withNousMemory } from "../src/ai-sdk.js";
import { agent, client, llmUrl } from "./env.js";

// The model is the AI SDK's OpenAI-compatible provider talking to the scripted server the
// Python test runs; that server answers "I recall: ..." with the memory block it was sent.
const provider = createOpenAICompatible({ name: "scripted", baseURL: llmUrl, apiKey: "unused" });
const A = agent("middleware");

test("context goes in before the call and the turn is recorded after it", async () => {
  await client.learnFact(A, "Ana's sister Mia lives in Porto", { subject: "Mia" });
  const memory = nousMemory({ client, agentId: A, title: "Chat with Ana", budgetTokens: 300 });
  const model = wrapLanguageModel({ model: provider.chatModel("scripted"),
                                    middleware: memory.middleware });

  const first = await generateText({ model, prompt: "Where does Mia live?" });
  assert.match(first.text, /^I recall: .*Mia lives in Porto/);
  assert.ok(memory.lastContext()!.tokens_used <= 300);
  const episodeId = await memory.episodeId();
  const started = (await client.getEpisode(A, episodeId)).detail;
  assert.equal(started.kind === "episode" ? started.title : null, "Chat with Ana");
  let messages = await client.transcript(A, episodeId);
  assert.deepEqual(messages.map((m) => [m.role, m.content]),
    [["user", "Where does Mia live?"], ["assistant", first.text]]);

  const streamed = streamText({ model, messages: [
    { role: "user", content: "Where does Mia live?" },
    { role: "assistant", content: first.text },
    { role: "user", content: "Who is Mia's sister?" },
  ] });
  const text = await streamed.text;
  assert.match(text, /^I recall: .*Ana's sister Mia/);
  messages = await client.transcript(A, episodeId);
  assert.deepEqual(messages.slice(2).map((m) => [m.role, m.content]),
    [["user", "Who is Mia's sister?"], ["assistant", text]]);
});

test("a tool loop records the question once and the final answer", async () => {
  const T = agent("tools");
  const memory = nousMemory({ client, agentId: T, title: "Tools" });
  const model = wrapLanguageModel({ model: provider.chatModel("scripted"),
                                    middleware: memory.middleware });
  const clock = tool({
    description: "The time now",
    inputSchema: jsonSchema<Record<string, never>>({ type: "object", properties: {} }),
    execute: async () => "12:00",
  });
  const result = await generateText({ model, prompt: "What time is it?", tools: { clock },
                                      stopWhen: stepCountIs(3) });
  assert.equal(result.steps.length, 2);
  assert.match(result.text, /^It is .*12:00/);
  const messages = await client.transcript(T, await memory.episodeId());
  assert.deepEqual(messages.map((m) => [m.role, m.content]),
    [["user", "What time is it?"], ["assistant", result.text]]);
});

test("an agent with no memories gets no block; record: false stores nothing", async () => {
  const empty = agent("empty");
  const model = withNousMemory(provider.chatModel("scripted"),
    { client, agentId: empty, record: false });
  const answer = await generateText({ model, prompt: "Anything about me?" });
  assert.equal(answer.text, "I recall: nothing");
  assert.deepEqual((await client.list(empty)).items, []);
});

test("a failing memory service fails the call with its error", async () => {
  const model = withNousMemory(provider.chatModel("scripted"),
    { client, agentId: "not-this-keys-agent" });
  await assert.rejects(generateText({ model, prompt: "Hello?", maxRetries: 0 }),
    /HTTP 403/);
});

test("user: each person reads theirs and the shared, and the episode is theirs", async () => {
  // the last test of the file: it adds people's facts to the middleware agent
  await client.learnFact(A, "The house wifi network is called Otter");  // the owner's: shared
  for (const [user, content] of [["ana", "My therapist is Dr Alves"],
                                 ["ben", "My dog Rex needs a walker"]] as const) {
    const learned = await client.api.POST("/agents/{agent_id}/facts/learn", {
      params: { path: { agent_id: A } }, headers: { "X-User": user }, body: { content } });
    assert.equal(learned.response.status, 200);
  }
  const question = "Who is my therapist, who needs a walker and what is the wifi called?";
  const ben = nousMemory({ client, agentId: A, user: "Ben", title: "Ben's chat" });
  const benModel = wrapLanguageModel({ model: provider.chatModel("scripted"),
                                       middleware: ben.middleware });
  const forBen = await generateText({ model: benModel, prompt: question });
  assert.match(forBen.text, /Otter/);
  assert.match(forBen.text, /Rex/);
  assert.doesNotMatch(forBen.text, /Alves/);
  const episode = await client.getEpisode(A, await ben.episodeId());
  assert.deepEqual(episode.people, ["ben"]);
  assert.deepEqual((await client.transcript(A, episode.id)).map((m) => m.content),
    [question, forBen.text]);

  const ana = withNousMemory(provider.chatModel("scripted"),
    { client, agentId: A, user: "Ana", record: false });
  const forAna = await generateText({ model: ana, prompt: question });
  assert.match(forAna.text, /Alves/);
  assert.match(forAna.text, /Otter/);
  assert.doesNotMatch(forAna.text, /Rex/);
});
