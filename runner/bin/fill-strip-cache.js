#!/usr/bin/env node
// Fills the runner's strip cache (strip-cache.js) for every module it can load: the image runs
// this at build time, because its /app is read-only when runners start.
import { fileURLToPath } from 'node:url';
import { fillStripCache, STRIP_CACHE_DIR } from './strip-cache.js';

const roots = ['runner/src', 'protocol/src', 'offline-model/src'].map((dir) =>
  fileURLToPath(new URL(`../../${dir}`, import.meta.url)),
);
const count = fillStripCache(roots);
process.stdout.write(`${count} modules stripped into ${STRIP_CACHE_DIR}\n`);
