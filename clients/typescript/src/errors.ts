/**
 * The service's errors as one class: every 4xx names its fields and reasons
 * (`{"detail": [{"field", "reason"}]}`), a 401/403/404/409 carries a sentence.
 */

export interface FieldProblem {
  field: string;
  reason: string;
}

export class NousMemoryError extends Error {
  readonly status: number;
  /** The fields and reasons of a 413 or 422 (empty for other statuses). */
  readonly problems: FieldProblem[];

  constructor(status: number, message: string, problems: FieldProblem[] = []) {
    super(message);
    this.name = "NousMemoryError";
    this.status = status;
    this.problems = problems;
  }

  /** The error a response stands for, from its body (`detail`) and status. */
  static from(status: number, body: unknown): NousMemoryError {
    const detail = (body as { detail?: unknown } | null)?.detail;
    if (Array.isArray(detail)) {
      const problems = detail.filter(isProblem);
      const text = problems.map((p) => `${p.field}: ${p.reason}`).join("; ");
      return new NousMemoryError(status, `HTTP ${status}: ${text}`, problems);
    }
    const text = typeof detail === "string" ? detail : JSON.stringify(body);
    return new NousMemoryError(status, `HTTP ${status}: ${text}`);
  }
}

function isProblem(value: unknown): value is FieldProblem {
  const p = value as Partial<FieldProblem> | null;
  return typeof p?.field === "string" && typeof p.reason === "string";
}
