/**
 * Sending a call again when the service says it may be sent again, as the Python
 * client does: a 409 with `Retry-After` (another transaction held what the call needed
 * and nothing was written) for any call, and a 502, 503 or 504 (the database or the
 * service briefly unavailable) for a call that does the same when it is made twice: a
 * read, and the calls the Python client marks so (`SAME_TWICE`).  A 5xx can come after
 * the work was done, so a delete, an append or a new memory is not sent again.  The wait
 * is the response's `Retry-After`, else a backoff that doubles from `backoffMs`, at most
 * `maxBackoffMs`, with jitter so that clients do not come back together; aborting the
 * call ends it.
 */

export interface RetryOptions {
  /** Tries in all, the first included (default 3; 1 sends each call once). */
  maxAttempts?: number;
  /** The first wait without a `Retry-After` (default 200 ms). */
  backoffMs?: number;
  /** The longest wait, `Retry-After` included (default 5 s). */
  maxBackoffMs?: number;
}

const UNAVAILABLE = new Set([502, 503, 504]);
/** Writes that do the same when made twice (nous_memory/client: `idempotent=True`). */
const SAME_TWICE: ReadonlyArray<[string, RegExp]> = [
  ["POST", /\/agents\/[^/]+\/(recall|context|imports)$/],
  ["POST", /\/agents\/[^/]+\/episodes\/[^/]+\/(close|prompt)$/],
  ["PUT", /\/agents\/[^/]+\/conversation-policy$/],
];

/** Whether `response` to `request` may be answered by sending the call again. */
export function sendAgain(request: Request, response: Response): boolean {
  if (response.status === 409) {
    return response.headers.has("Retry-After");
  }
  if (!UNAVAILABLE.has(response.status)) {
    return false;
  }
  const method = request.method.toUpperCase();
  const path = new URL(request.url).pathname;
  return method === "GET" || method === "HEAD"
    || SAME_TWICE.some(([m, pattern]) => m === method && pattern.test(path));
}

/** `send`, sending a call again while `sendAgain` says so, up to `maxAttempts` tries. */
export function retrying(send: typeof globalThis.fetch,
                         options: RetryOptions = {}): typeof globalThis.fetch {
  const maxAttempts = options.maxAttempts ?? 3;
  const backoffMs = options.backoffMs ?? 200;
  const maxBackoffMs = options.maxBackoffMs ?? 5000;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new RangeError("retry.maxAttempts must be an integer >= 1");
  }
  return async (input, init) => {
    const request = new Request(input, init);
    for (let attempt = 1; ; attempt += 1) {
      const last = attempt >= maxAttempts;
      // a request's body is read when sent: each try but the last sends a copy
      const response = await send(last ? request : request.clone());
      if (last || !sendAgain(request, response)) {
        return response;
      }
      await response.body?.cancel();
      await sleep(wait(attempt, response.headers.get("Retry-After"), backoffMs, maxBackoffMs),
                  request.signal);
    }
  };
}

function wait(attempt: number, retryAfter: string | null, backoffMs: number,
              maxBackoffMs: number): number {
  const seconds = retryAfter !== null && /^\d+$/.test(retryAfter) ? Number(retryAfter) : null;
  const base = seconds !== null ? seconds * 1000 : backoffMs * 2 ** (attempt - 1);
  return Math.min(base, maxBackoffMs) * (0.5 + Math.random() / 2);
}

/** `ms` of waiting, ended early (rejected with the abort's reason) by `signal`. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const aborted = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", aborted);
      resolve();
    }, ms);
    signal.addEventListener("abort", aborted, { once: true });
  });
}
