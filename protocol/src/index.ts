// Everything here loads in workerd as well as Node: no Node-only imports.
export * from './backend.ts';
export * from './events.ts';
export * from './adapter.ts';
export * from './limits.ts';
export * from './adapters.ts';
export * from './jsonl.ts';
export * from './wire.ts';
export * from './http.ts';
export * from './encoding.ts';
export * from './launch-env.ts';
export * from './provider-errors.ts';
export { INHERITED_ENV, allowListedEnv } from './env.ts';
export { claudeHookCommand, claudeTranscriptPath, CLAUDE_DEFAULT_TOOLS } from './claude/spawn.ts';
export { PI_DEFAULT_TOOLS, PI_DEFAULT_MODEL } from './pi/spawn.ts';
export { ClaudeCodec } from './claude/codec.ts';
export { PiCodec } from './pi/codec.ts';
export * from './sigv4.ts';
