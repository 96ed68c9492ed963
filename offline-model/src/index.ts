export { startOfflineModel } from './server.ts';
export type { OfflineModel, RecordedRequest, StartOptions } from './server.ts';
export {
  decideReply,
  findDirective,
  isMainTurn,
  mapTool,
  MessagesRequestSchema,
  ScriptSchema,
  SIDE_REPLY_TEXT,
  THINKING_SIGNATURE,
} from './script.ts';
export type { ErrorReply, MessageReply, MessagesRequest, Reply, ReplySource, ReplyStep, Script } from './script.ts';
export { encodeError, encodeMessage, encodeStream, sseEvent } from './sse.ts';
export type { StreamChunk } from './sse.ts';
