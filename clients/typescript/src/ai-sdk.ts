/** The AI SDK middleware, apart from the client so that `ai` stays an optional peer. */
export {
  type NousMemory,
  nousMemory,
  type NousMemoryOptions,
  withNousMemory,
  type WrappableModel,
} from "./middleware.js";
