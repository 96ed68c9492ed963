export type { MessagesRequest } from './request.ts';
export { isMainTurn, MessagesRequestSchema } from './request.ts';
export type { ErrorReply, MessageReply, Reply, ReplySource, ReplyStep, Script } from './script.ts';
export { decideReply, findDirective, ScriptSchema, SIDE_REPLY_TEXT, THINKING_SIGNATURE } from './script.ts';
export type { OfflineModel, RecordedRequest, StartOptions } from './server.ts';
export { startOfflineModel } from './server.ts';
export type { StreamChunk } from './sse.ts';
export { encodeError, encodeMessage, encodeStream, sseEvent } from './sse.ts';
export { mapTool } from './tools.ts';
