// Preloaded (`node --import`) into the guard's processes: claude's hook as the runner runs it from
// source, a node process started for every tool call (the bundle gives claude a one-file build of
// it instead), and pi (NODE_OPTIONS), which imports its guard extension natively. Their
// TypeScript modules are served from the strip cache, so neither loads Node's TypeScript stripper
// (runner/src/sandbox/sandbox.ts, GUARD_PRELOAD). NODE_OPTIONS reaches every node the agent
// starts, too: an older Node, without module hooks or type stripping, just skips it.
import module from 'node:module';

if (typeof module.registerHooks === 'function') {
  const { registerStripCache } = await import('./strip-cache.js');
  registerStripCache();
}
