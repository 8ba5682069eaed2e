import assert from "node:assert/strict";
import { test } from "node:test";

import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, type ModelMessage } from "ai";

import { withNousMemory } from "../src/ai-sdk.js";
import { agent, client } from "./env.js";

// Each provider's own prompt conversion, with a fetch that answers as its API would
// (no network): a multi-turn call through the wrapper must reach the request, the
// context among the system instructions, where each provider takes them.
const A = agent("providers");

function answering(body: unknown, sent: unknown[]): typeof fetch {
  return async (_url, init) => {
    sent.push(JSON.parse(String(init?.body)));
    return new Response(JSON.stringify(body), {
      status: 200, headers: { "content-type": "application/json" } });
  };
}

const GOOGLE = { candidates: [{ content: { role: "model", parts: [{ text: "ok" }] },
                                finishReason: "STOP" }],
                 usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1,
                                  totalTokenCount: 2 } };
const ANTHROPIC = { id: "msg_1", type: "message", role: "assistant", model: "claude-test",
                    content: [{ type: "text", text: "ok" }], stop_reason: "end_turn",
                    stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } };
const OPENAI = { id: "c1", object: "chat.completion", created: 0, model: "gpt-test",
                 choices: [{ index: 0, finish_reason: "stop",
                             message: { role: "assistant", content: "ok" } }],
                 usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };

const CONVERSATION: ModelMessage[] = [
  { role: "user", content: "Hi!" },
  { role: "assistant", content: "Hello! How can I help?" },
  { role: "user", content: "Where does my sister live?" },
];

test("a multi-turn call reaches Google, Anthropic and OpenAI with the context", async () => {
  await client.learnFact(A, "The user's sister Ines lives in Coimbra", { subject: "Ines" });
  const sent: Record<string, unknown[]> = { google: [], anthropic: [], openai: [] };
  const models = {
    google: createGoogleGenerativeAI({ apiKey: "x", fetch: answering(GOOGLE, sent.google!) })(
      "gemini-test"),
    anthropic: createAnthropic({ apiKey: "x", fetch: answering(ANTHROPIC, sent.anthropic!) })(
      "claude-test"),
    openai: createOpenAI({ apiKey: "x", fetch: answering(OPENAI, sent.openai!) }).chat(
      "gpt-test"),
  };
  for (const [name, model] of Object.entries(models)) {
    const wrapped = withNousMemory(model, { client, agentId: A, record: false });
    const result = await generateText({ model: wrapped, instructions: "You are a kind assistant.",
                                        messages: CONVERSATION });
    assert.equal(result.text, "ok", name);
    const request = JSON.stringify(sent[name]![0]);
    assert.match(request, /Coimbra/, name);
    assert.match(request, /You are a kind assistant/, name);
  }
  // where each provider takes system text: Google's instruction, Anthropic's system
  const google = sent.google![0] as { systemInstruction: { parts: { text: string }[] } };
  assert.match(JSON.stringify(google.systemInstruction), /kind assistant.*Coimbra/s);
  const anthropic = sent.anthropic![0] as { system: { text: string }[] };
  assert.match(JSON.stringify(anthropic.system), /kind assistant.*Coimbra/s);
  const openai = sent.openai![0] as { messages: { role: string; content: string }[] };
  assert.deepEqual(openai.messages.map((m) => m.role),
    ["system", "system", "user", "assistant", "user"]);
});
