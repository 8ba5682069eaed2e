import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText } from "ai";
import { NousMemoryClient } from "nous-memory-client";
import { withNousMemory } from "nous-memory-client/ai-sdk";

const memory = new NousMemoryClient({
  url: "http://127.0.0.1:8765",
  apiKey: process.env.NOUS_MEMORY_API_KEY,
});
await memory.learnFact("assistant-1", "Ana's sister Mia lives in Porto", { subject: "Mia" });

const provider = createOpenAICompatible({
  name: "llm",
  baseURL: process.env.OPENAI_BASE_URL ?? "https://api.openai.com/v1",
  apiKey: process.env.OPENAI_API_KEY,
});
const model = withNousMemory(provider.chatModel("gpt-4o-mini"), {
  client: memory,
  agentId: "assistant-1",
  title: "Chat with Ana",  // the episode the turns go to (or pass episodeId)
  budgetTokens: 800,
});
const { text } = await generateText({ model, prompt: "Where does Mia live?" });
console.log(text);
