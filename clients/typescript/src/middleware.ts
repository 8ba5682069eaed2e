/**
 * `withNousMemory(model, options)`: an AI SDK language model with long-term memory.
 *
 * Before each call, the memories relevant to the user's newest message (the service's
 * assembled context, within a token budget) go into the prompt as a system message,
 * after the prompt's own system messages and before the conversation: where every
 * provider takes one (Google and Anthropic take system messages only at the start).  After the call, the turn is appended to an episode: the
 * user's message when the call answers a new one, and the model's text.  A call that
 * continues a tool loop (its prompt ends with tool results) records only the answer,
 * so a user's message is stored once however many steps answer it.
 *
 * People: with `user` (a user id or name) every request the middleware sends says who
 * the user is (the `X-User` header): the context holds only that person's memories and
 * the shared ones, and the episode it starts is theirs, so what is learned from it is
 * theirs.  Without it the calls are the owner's, who reads everything.
 */

import { type LanguageModelMiddleware, wrapLanguageModel } from "ai";

import type { Context, MessageIn, NousMemoryClient } from "./client.js";
import { NousMemoryError } from "./errors.js";

type Transform = NonNullable<LanguageModelMiddleware["transformParams"]>;
type CallOptions = Parameters<Transform>[0]["params"];
type PromptMessage = CallOptions["prompt"][number];
type WrapGenerate = NonNullable<LanguageModelMiddleware["wrapGenerate"]>;
type GenerateResult = Awaited<ReturnType<WrapGenerate>>;
type WrapStream = NonNullable<LanguageModelMiddleware["wrapStream"]>;
type StreamPart = Awaited<ReturnType<WrapStream>>["stream"] extends ReadableStream<infer P>
  ? P : never;
export type WrappableModel = Parameters<typeof wrapLanguageModel>[0]["model"];

export interface NousMemoryOptions {
  client: NousMemoryClient;
  /** The agent whose memories are read and whose episode records the turns. */
  agentId: string;
  /** The episode that records the turns; left out, one is started at the first call. */
  episodeId?: string;
  /** The title of an episode started here. */
  title?: string;
  /** Tokens of context (cl100k), 1500 by default. */
  budgetTokens?: number;
  /** The context's sections: names, or name -> token budget. */
  sections?: string[] | Record<string, number>;
  /** Record the turns (true by default); false only reads memories. */
  record?: boolean;
  /** The person talking (a user id or name), sent with every request; left out, the
   * owner, who reads everything. */
  user?: string;
}

export interface NousMemory {
  middleware: LanguageModelMiddleware;
  /** The episode the turns go to (started on first use when none was given). */
  episodeId(): Promise<string>;
  /** The context put into the last call's prompt (undefined before the first call). */
  lastContext(): Context | undefined;
}

const DEFAULT_BUDGET_TOKENS = 1500;

/** The middleware and its episode, for `wrapLanguageModel` or your own composition. */
export function nousMemory(options: NousMemoryOptions): NousMemory {
  const { client, agentId, user } = options;
  let episode: Promise<string> | undefined =
    options.episodeId === undefined ? undefined : Promise.resolve(options.episodeId);
  let context: Context | undefined;
  // the person on every request: the header, through the typed client's own options
  const headers = user === undefined ? {} : { "X-User": user };
  const path = { agent_id: agentId };

  const episodeId = (): Promise<string> => {
    episode ??= unwrap(client.api.POST("/agents/{agent_id}/episodes", {
      params: { path }, headers,
      body: present({ title: options.title, user_id: user }),
    })).then((made) => made.id);
    return episode;
  };

  const transformParams: Transform = async ({ params }) => {
    const asked = lastUserIndex(params.prompt);
    if (asked < 0) {
      return params;
    }
    const query = textOf(params.prompt[asked]!);
    if (!query.trim()) {
      return params;
    }
    context = await unwrap(client.api.POST("/agents/{agent_id}/context", {
      params: { path }, headers, body: present({
        query,
        budget_tokens: options.budgetTokens ?? DEFAULT_BUDGET_TOKENS,
        sections: options.sections,
      }),
    }));
    if (!context.items.length) {
      return params;
    }
    const block: PromptMessage = { role: "system", content: context.text };
    const lead = params.prompt.findIndex((message) => message.role !== "system");
    const at = lead < 0 ? params.prompt.length : lead;
    const prompt = [...params.prompt.slice(0, at), block, ...params.prompt.slice(at)];
    return { ...params, prompt };
  };

  const record = async (params: CallOptions, answer: string,
                        toolCalls: unknown[]): Promise<void> => {
    if (options.record === false) {
      return;
    }
    const messages: MessageIn[] = [];
    const last = params.prompt[params.prompt.length - 1];
    if (last?.role === "user" && textOf(last).trim()) {
      messages.push({ role: "user", content: textOf(last) });
    }
    if (answer.trim()) {
      messages.push(toolCalls.length
        ? { role: "assistant", content: answer, metadata: { tool_calls: toolCalls } }
        : { role: "assistant", content: answer });
    }
    if (messages.length) {
      await unwrap(client.api.POST("/agents/{agent_id}/episodes/{episode_id}/messages", {
        params: { path: { ...path, episode_id: await episodeId() } }, headers,
        body: { messages },
      }));
    }
  };

  const wrapGenerate: WrapGenerate = async ({ doGenerate, params }) => {
    const result: GenerateResult = await doGenerate();
    const answer = result.content.flatMap((part) => part.type === "text" ? [part.text] : [])
      .join("");
    const calls = result.content.filter((part) => part.type === "tool-call");
    await record(params, answer, calls);
    return result;
  };

  const wrapStream: WrapStream = async ({ doStream, params }) => {
    const { stream, ...rest } = await doStream();
    let answer = "";
    const calls: StreamPart[] = [];
    const recorder = new TransformStream<StreamPart, StreamPart>({
      transform(part, controller) {
        if (part.type === "text-delta") {
          answer += part.delta;
        } else if (part.type === "tool-call") {
          calls.push(part);
        }
        controller.enqueue(part);
      },
      async flush() {
        await record(params, answer, calls);
      },
    });
    return { stream: stream.pipeThrough(recorder), ...rest };
  };

  return {
    middleware: { specificationVersion: "v4", transformParams, wrapGenerate, wrapStream },
    episodeId,
    lastContext: () => context,
  };
}

/** `model` with long-term memory from the nous-memory service (see `nousMemory`). */
export function withNousMemory(model: WrappableModel, options: NousMemoryOptions) {
  return wrapLanguageModel({ model, middleware: nousMemory(options).middleware });
}

function lastUserIndex(prompt: CallOptions["prompt"]): number {
  for (let i = prompt.length - 1; i >= 0; i -= 1) {
    if (prompt[i]!.role === "user") {
      return i;
    }
  }
  return -1;
}

function textOf(message: PromptMessage): string {
  if (typeof message.content === "string") {
    return message.content;
  }
  return message.content.flatMap((part) => part.type === "text" ? [part.text] : [])
    .join("\n");
}

/** A response's body, or the service's error (as the client's own calls throw it). */
async function unwrap<T>(pending: Promise<{ data?: T; error?: unknown; response: Response }>
): Promise<T> {
  const { data, error, response } = await pending;
  if (!response.ok) {
    throw NousMemoryError.from(response.status, error);
  }
  return data as T;
}

function present<T extends object>(value: T): T {
  return Object.fromEntries(
    Object.entries(value).filter(([, v]) => v !== undefined && v !== null),
  ) as T;
}
