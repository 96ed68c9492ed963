// Preloaded (`node --import`) into claude's guard hook, a node process started for every tool
// call: its TypeScript modules are served from the strip cache, so the hook starts without
// Node's TypeScript stripper (runner/src/sandbox/sandbox.ts, GUARD_PRELOAD).
import { registerStripCache } from './strip-cache.js';

registerStripCache();
