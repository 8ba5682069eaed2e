/** The running service and scripted model the Python test started (loopback). */
import { NousMemoryClient } from "../src/index.js";

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set: run these tests through ` +
      "tests/integration/test_typescript_client.py, which starts the service");
  }
  return value;
}

export const url = required("NOUS_MEMORY_URL");
export const apiKey = required("NOUS_MEMORY_API_KEY");
export const llmUrl = required("SCRIPTED_LLM_URL");
/** An agent the key may act for, fresh for each test file. */
export function agent(name: string): string {
  return `${required("NOUS_MEMORY_AGENT_PREFIX")}${name}`;
}
export const client = new NousMemoryClient({ url, apiKey });
