/**
 * The hand-written layer over the generated types: the same verbs as the Python remote
 * client (`nous_memory.client.AsyncMemoryClient`), in camelCase, each one request.
 * Paths, bodies and results are typed from the service's OpenAPI document
 * (src/generated/schema.ts), so a call the service would not take does not compile.
 */

import createClient, { type Client } from "openapi-fetch";

import { NousMemoryError } from "./errors.js";
import { type RetryOptions, retrying } from "./retry.js";
import type { components, paths } from "./generated/schema.js";

type Schemas = components["schemas"];
export type Memory = Schemas["Memory"];
export type MemoryCreate = Schemas["MemoryCreate"];
export type MemoryChanges = Schemas["MemoryChanges"];
export type MemoryEvent = Schemas["MemoryEvent"];
export type Page = Schemas["Page"];
export type LearnResult = Schemas["LearnResult"];
export type FactHistory = Schemas["FactHistory"];
export type FactLearn = Schemas["FactLearn"];
export type EpisodeStart = Schemas["EpisodeStart"];
export type MessageIn = Schemas["MessageAppend"]["messages"][number];
export type AppendResult = Schemas["AppendResult"];
export type TranscriptPage = Schemas["TranscriptPage"];
export type TranscriptEntry = Schemas["TranscriptEntry"];
export type RecallRequest = Schemas["RecallRequest"];
export type RecallResult = Schemas["RecallResult"];
export type ContextRequest = Schemas["ContextRequest"];
export type Context = Schemas["Context"];
export type Expanded = Schemas["Expanded"];
export type HistoryImport = Schemas["HistoryImport"];
export type IngestResult = Schemas["IngestResult"];
export type IngestStatus = Schemas["IngestStatus"];
export type ImportSummary = Schemas["ImportSummary"];
export type ErasureReceipt = Schemas["ErasureReceipt"];
export type PromptRequest = Schemas["PromptRequest"];
export type Prompt = Schemas["Prompt"];
export type SummarizeRequest = Schemas["SummarizeRequest"];
export type Summarized = Schemas["Summarized"];
export type ConversationSummary = Schemas["ConversationSummary"];
export type SummaryHistory = Schemas["SummaryHistory"];
export type ConversationPolicy = Schemas["ConversationPolicy"];
export type PolicyChanges = Schemas["PolicyChanges"];
export type MessageChange = Schemas["MessageChange"];
export type MessageErasure = Schemas["MessageErasure"];
export type Health = Schemas["Health"];
export type Readiness = Schemas["Readiness"];
export type Restored = Schemas["Restored"];
export type Upcoming = Schemas["Upcoming"];

type Query<P extends keyof paths, M extends keyof paths[P]> =
  paths[P][M] extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

export interface ClientOptions {
  /** The service's address, e.g. `http://127.0.0.1:8000`. */
  url: string;
  /** Sent as `Authorization: Bearer KEY` when the service has keys. */
  apiKey?: string;
  /** A fetch of your own (a proxy, a test double is not needed: the service is real). */
  fetch?: typeof globalThis.fetch;
  /** How calls are sent again when the service says they may be (src/retry.ts); `false`
   * sends each call once. */
  retry?: RetryOptions | false;
}

interface Outcome<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

async function unwrap<T>(pending: Promise<Outcome<T>>): Promise<T> {
  const { data, error, response } = await pending;
  if (!response.ok) {
    throw NousMemoryError.from(response.status, error);
  }
  return data as T;
}

/** Drops the fields set to undefined or null, which the service reads as left out. */
function present<T extends object>(body: T): T {
  return Object.fromEntries(
    Object.entries(body).filter(([, value]) => value !== undefined && value !== null),
  ) as T;
}

export class NousMemoryClient {
  /** The generated, typed client, for a route this layer does not wrap. */
  readonly api: Client<paths>;

  constructor(options: ClientOptions) {
    const headers: Record<string, string> = {};
    if (options.apiKey) {
      headers.Authorization = `Bearer ${options.apiKey}`;
    }
    const send = options.fetch ?? globalThis.fetch;
    this.api = createClient<paths>({
      baseUrl: options.url.replace(/\/+$/, ""),
      headers,
      fetch: options.retry === false ? send : retrying(send, options.retry),
    });
  }

  // ---------------------------------------------------------------- service

  health(): Promise<Health> {
    return unwrap(this.api.GET("/health"));
  }

  ready(): Promise<Readiness> {
    return unwrap(this.api.GET("/ready"));
  }

  // ---------------------------------------------------------------- memories

  remember(agentId: string, memory: MemoryCreate): Promise<Memory> {
    return unwrap(this.api.POST("/agents/{agent_id}/memories", {
      params: { path: { agent_id: agentId } }, body: memory,
    }));
  }

  async rememberMany(agentId: string, items: MemoryCreate[]): Promise<Memory[]> {
    const made = await unwrap(this.api.POST("/agents/{agent_id}/memories/batch", {
      params: { path: { agent_id: agentId } }, body: { items },
    }));
    return made.items;
  }

  get(agentId: string, memoryId: string, options: { includeDeleted?: boolean } = {}
  ): Promise<Memory> {
    return unwrap(this.api.GET("/agents/{agent_id}/memories/{memory_id}", {
      params: {
        path: { agent_id: agentId, memory_id: memoryId },
        query: { include_deleted: options.includeDeleted ?? false },
      },
    }));
  }

  update(agentId: string, memoryId: string, changes: MemoryChanges): Promise<Memory> {
    return unwrap(this.api.PATCH("/agents/{agent_id}/memories/{memory_id}", {
      params: { path: { agent_id: agentId, memory_id: memoryId } }, body: changes,
    }));
  }

  async delete(agentId: string, memoryId: string, options: { purge?: boolean } = {}
  ): Promise<void> {
    await unwrap(this.api.DELETE("/agents/{agent_id}/memories/{memory_id}", {
      params: {
        path: { agent_id: agentId, memory_id: memoryId },
        query: { purge: options.purge ?? false },
      },
    }));
  }

  history(agentId: string, memoryId: string): Promise<MemoryEvent[]> {
    return unwrap(this.api.GET("/agents/{agent_id}/memories/{memory_id}/history", {
      params: { path: { agent_id: agentId, memory_id: memoryId } },
    }));
  }

  list(agentId: string, query: Query<"/agents/{agent_id}/memories", "get"> = {}
  ): Promise<Page> {
    return unwrap(this.api.GET("/agents/{agent_id}/memories", {
      params: { path: { agent_id: agentId }, query },
    }));
  }

  restore(agentId: string, memoryId: string): Promise<Restored> {
    return unwrap(this.api.POST("/agents/{agent_id}/memories/{memory_id}/restore", {
      params: { path: { agent_id: agentId, memory_id: memoryId } },
    }));
  }

  // ---------------------------------------------------------------- facts

  learnFact(agentId: string, content: string, fields: Omit<FactLearn, "content"> = {}
  ): Promise<LearnResult> {
    return unwrap(this.api.POST("/agents/{agent_id}/facts/learn", {
      params: { path: { agent_id: agentId } }, body: present({ ...fields, content }),
    }));
  }

  factHistory(agentId: string, factId: string): Promise<FactHistory> {
    return unwrap(this.api.GET("/agents/{agent_id}/facts/{fact_id}/history", {
      params: { path: { agent_id: agentId, fact_id: factId } },
    }));
  }

  factsFromEpisode(agentId: string, episodeId: string): Promise<Memory[]> {
    return unwrap(this.api.GET("/agents/{agent_id}/episodes/{episode_id}/facts", {
      params: { path: { agent_id: agentId, episode_id: episodeId } },
    }));
  }

  // ---------------------------------------------------------------- episodes

  startEpisode(agentId: string, fields: EpisodeStart = {}): Promise<Memory> {
    return unwrap(this.api.POST("/agents/{agent_id}/episodes", {
      params: { path: { agent_id: agentId } }, body: present(fields),
    }));
  }

  append(agentId: string, episodeId: string, messages: MessageIn[]): Promise<AppendResult> {
    return unwrap(this.api.POST("/agents/{agent_id}/episodes/{episode_id}/messages", {
      params: { path: { agent_id: agentId, episode_id: episodeId } }, body: { messages },
    }));
  }

  closeEpisode(agentId: string, episodeId: string): Promise<Memory> {
    return unwrap(this.api.POST("/agents/{agent_id}/episodes/{episode_id}/close", {
      params: { path: { agent_id: agentId, episode_id: episodeId } },
    }));
  }

  getEpisode(agentId: string, episodeId: string): Promise<Memory> {
    return unwrap(this.api.GET("/agents/{agent_id}/episodes/{episode_id}", {
      params: { path: { agent_id: agentId, episode_id: episodeId } },
    }));
  }

  async transcript(agentId: string, episodeId: string,
                   options: { fromSeq?: number; limit?: number } = {}
  ): Promise<TranscriptEntry[]> {
    const page = await unwrap(this.api.GET("/agents/{agent_id}/episodes/{episode_id}/messages", {
      params: {
        path: { agent_id: agentId, episode_id: episodeId },
        query: present({ from_seq: options.fromSeq, limit: options.limit }),
      },
    }));
    return page.messages;
  }

  /** The newest ``limit`` live messages of an episode, oldest first. */
  async latestMessages(agentId: string, episodeId: string, limit = 20
  ): Promise<TranscriptEntry[]> {
    const page = await unwrap(this.api.GET("/agents/{agent_id}/episodes/{episode_id}/messages", {
      params: { path: { agent_id: agentId, episode_id: episodeId }, query: { last: limit } },
    }));
    return page.messages;
  }

  // ---------------------------------------------------------------- working memory

  buildPrompt(agentId: string, episodeId: string, request: PromptRequest): Promise<Prompt> {
    return unwrap(this.api.POST("/agents/{agent_id}/episodes/{episode_id}/prompt", {
      params: { path: { agent_id: agentId, episode_id: episodeId } }, body: request,
    }));
  }

  summarizeConversation(agentId: string, episodeId: string, request: SummarizeRequest = {}
  ): Promise<Summarized> {
    return unwrap(this.api.POST("/agents/{agent_id}/episodes/{episode_id}/summary", {
      params: { path: { agent_id: agentId, episode_id: episodeId } }, body: request,
    }));
  }

  conversationSummary(agentId: string, episodeId: string): Promise<ConversationSummary> {
    return unwrap(this.api.GET("/agents/{agent_id}/episodes/{episode_id}/summary", {
      params: { path: { agent_id: agentId, episode_id: episodeId } },
    }));
  }

  summaryHistory(agentId: string, episodeId: string,
                 options: { limit?: number; offset?: number } = {}): Promise<SummaryHistory> {
    return unwrap(this.api.GET("/agents/{agent_id}/episodes/{episode_id}/summary/history", {
      params: { path: { agent_id: agentId, episode_id: episodeId }, query: present(options) },
    }));
  }

  conversationPolicy(agentId: string): Promise<ConversationPolicy> {
    return unwrap(this.api.GET("/agents/{agent_id}/conversation-policy", {
      params: { path: { agent_id: agentId } },
    }));
  }

  setConversationPolicy(agentId: string, knobs: PolicyChanges): Promise<ConversationPolicy> {
    return unwrap(this.api.PUT("/agents/{agent_id}/conversation-policy", {
      params: { path: { agent_id: agentId } }, body: knobs,
    }));
  }

  editMessage(agentId: string, episodeId: string, seq: number, content: string
  ): Promise<MessageChange> {
    return unwrap(this.api.PATCH("/agents/{agent_id}/episodes/{episode_id}/messages/{seq}", {
      params: { path: { agent_id: agentId, episode_id: episodeId, seq } }, body: { content },
    }));
  }

  deleteMessage(agentId: string, episodeId: string, seq: number): Promise<MessageChange> {
    return unwrap(this.api.DELETE("/agents/{agent_id}/episodes/{episode_id}/messages/{seq}", {
      params: { path: { agent_id: agentId, episode_id: episodeId, seq } },
    }));
  }

  /** Forget one message of an episode, open or closed, and every trace of it (an
   * owner's key): its text, or with `redact` only those strings; what was made from it
   * is made again and what was learned from it purged. */
  forgetMessage(agentId: string, episodeId: string, seq: number, redact?: string[]
  ): Promise<MessageErasure> {
    return unwrap(this.api.POST(
      "/agents/{agent_id}/episodes/{episode_id}/messages/{seq}/forget", {
        params: { path: { agent_id: agentId, episode_id: episodeId, seq } },
        body: redact === undefined ? {} : { redact },
      }));
  }

  // ---------------------------------------------------------------- history import

  ingest(agentId: string, sessions: HistoryImport["sessions"]): Promise<IngestResult> {
    return unwrap(this.api.POST("/agents/{agent_id}/imports", {
      params: { path: { agent_id: agentId } }, body: { sessions },
    }));
  }

  ingestStatus(agentId: string): Promise<IngestStatus> {
    return unwrap(this.api.GET("/agents/{agent_id}/imports", {
      params: { path: { agent_id: agentId } },
    }));
  }

  // ---------------------------------------------------------------- recall, context

  recall(agentId: string, query: string, options: Omit<RecallRequest, "query"> = {}
  ): Promise<RecallResult> {
    return unwrap(this.api.POST("/agents/{agent_id}/recall", {
      params: { path: { agent_id: agentId } }, body: present({ ...options, query }),
    }));
  }

  assembleContext(agentId: string, query: string, options: Omit<ContextRequest, "query"> = {}
  ): Promise<Context> {
    return unwrap(this.api.POST("/agents/{agent_id}/context", {
      params: { path: { agent_id: agentId } }, body: present({ ...options, query }),
    }));
  }

  /** The agent's plans in the next days, soonest first (a moved plan at its new date). */
  upcoming(agentId: string, options: { days?: number; asOf?: string; limit?: number } = {}
  ): Promise<Upcoming> {
    return unwrap(this.api.GET("/agents/{agent_id}/upcoming", {
      params: {
        path: { agent_id: agentId },
        query: present({ days: options.days, as_of: options.asOf, limit: options.limit }),
      },
    }));
  }

  expand(agentId: string, memoryIdOrRef: string): Promise<Expanded> {
    return unwrap(this.api.GET("/agents/{agent_id}/memories/{memory_id}/expand", {
      params: { path: { agent_id: agentId, memory_id: memoryIdOrRef } },
    }));
  }

  // ---------------------------------------------------------------- a whole agent

  /** The export file (JSON Lines) as a stream of bytes, as it arrives. */
  async exportAgent(agentId: string): Promise<ReadableStream<Uint8Array>> {
    const { error, response } = await this.api.GET("/agents/{agent_id}/export", {
      params: { path: { agent_id: agentId } }, parseAs: "stream",
    });
    if (!response.ok || response.body === null) {
      throw NousMemoryError.from(response.status, error);
    }
    return response.body;
  }

  /** Import an export file (all or nothing); `agentId` is the agent it goes into. */
  importAgent(agentId: string, file: string | Uint8Array,
              options: { allowOtherModel?: boolean; dryRun?: boolean } = {}
  ): Promise<ImportSummary> {
    return unwrap(this.api.POST("/agents/{agent_id}/import", {
      params: {
        path: { agent_id: agentId },
        query: { allow_other_model: options.allowOtherModel ?? false,
                 dry_run: options.dryRun ?? false },
      },
      body: file as unknown as string,
      bodySerializer: (body: unknown) => body as BodyInit,
      headers: { "Content-Type": "application/x-ndjson" },
    }));
  }

  forgetAgent(agentId: string): Promise<ErasureReceipt> {
    return unwrap(this.api.DELETE("/agents/{agent_id}", {
      params: { path: { agent_id: agentId } },
    }));
  }
}
