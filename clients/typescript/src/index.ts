export * from "./client.js";
export { type FieldProblem, NousMemoryError } from "./errors.js";
export {
  type NousMemory,
  nousMemory,
  type NousMemoryOptions,
  withNousMemory,
  type WrappableModel,
} from "./middleware.js";
export type { components, paths } from "./generated/schema.js";
