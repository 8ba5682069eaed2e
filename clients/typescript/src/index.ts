export * from "./client.js";
export { type FieldProblem, NousMemoryError } from "./errors.js";
export type { components, paths } from "./generated/schema.js";
export type { RetryOptions } from "./retry.js";
