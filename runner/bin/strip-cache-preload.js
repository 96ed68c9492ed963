// Preloaded (`node --import`, through NODE_OPTIONS) into pi, which imports its guard extension
// natively: the guard's TypeScript modules are served from the strip cache, so pi does not load
// Node's TypeScript stripper (runner/src/sandbox/sandbox.ts, GUARD_PRELOAD). NODE_OPTIONS reaches
// every node the agent starts, too: an older Node, without module hooks or type stripping, just
// skips it.
import module from 'node:module';

if (typeof module.registerHooks === 'function') {
  const { registerStripCache } = await import('./strip-cache.js');
  registerStripCache();
}
