// Type-stripped sources kept on disk, so a runner that finds its modules here never loads
// Node's TypeScript stripper (amaro, a WebAssembly build of swc). Loading it costs about 30 MiB
// of RSS for the runner's ~90 modules (its wasm memory grows with the files it strips and is
// never given back), a third of the whole process. Node 22's compile cache keeps compiled code,
// not the stripped text, so it does not avoid this.
//
// An entry is named by a hash of the TypeScript source and of the Node and amaro versions, so an
// edited file can never be served stale: it is a miss, stripped as Node would strip it, and
// written for the next process. A missing, unreadable or unwritable directory only costs memory.
// The image fills the directory at build time (runner/bin/fill-strip-cache.js); it is read-only
// there. Only ES modules outside node_modules are served (Node refuses to strip those anyway).
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { registerHooks, stripTypeScriptTypes } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the bin keeps the cache: the repository's (the image's /app) node_modules/.cache. */
export const STRIP_CACHE_DIR = fileURLToPath(new URL('../../node_modules/.cache/switchyard-strip/', import.meta.url));

/** The entry file name for one TypeScript source under this Node. */
function entryName(source) {
  const hash = createHash('sha256');
  hash.update(`${process.version}\0${process.versions.amaro ?? ''}\0`);
  hash.update(source);
  return `${hash.digest('hex').slice(0, 40)}.js`;
}

/** Node's own type stripping (the mode it loads .ts files with), without its experimental-API warning. */
function strip(source) {
  const emitWarning = process.emitWarning;
  // The only warning this synchronous call can raise is stripTypeScriptTypes' own
  // ExperimentalWarning, which would be a non-JSON line in the runner's log stream.
  process.emitWarning = () => {};
  try {
    return stripTypeScriptTypes(source, { mode: 'strip' });
  } finally {
    process.emitWarning = emitWarning;
  }
}

/** Writes one entry (temp file + rename, so a concurrent reader never sees half a file). */
function store(dir, name, js) {
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `.${name}.${process.pid}`);
  try {
    writeFileSync(tmp, js);
    renameSync(tmp, join(dir, name));
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** Serves `.ts` ES modules from `dir`, stripping and storing on a miss. */
export function registerStripCache(dir = STRIP_CACHE_DIR) {
  registerHooks({
    load(url, context, nextLoad) {
      if (context.format !== 'module-typescript' || !url.startsWith('file:') || url.includes('/node_modules/'))
        return nextLoad(url, context);
      let source;
      try {
        source = readFileSync(fileURLToPath(url), 'utf8');
      } catch {
        return nextLoad(url, context);
      }
      const name = entryName(source);
      try {
        return { format: 'module', source: readFileSync(join(dir, name), 'utf8'), shortCircuit: true };
      } catch {
        // A miss: strip below.
      }
      let js;
      try {
        js = strip(source);
      } catch {
        // Not strippable (syntax that needs transforming, a syntax error): Node reports it.
        return nextLoad(url, context);
      }
      try {
        store(dir, name, js);
      } catch {
        // Read-only image or no permission: this process has stripped it already.
      }
      return { format: 'module', source: js, shortCircuit: true };
    },
  });
}

/** Strips every `.ts` file under `roots` into `dir`; returns how many entries were written. */
export function fillStripCache(roots, dir = STRIP_CACHE_DIR) {
  let count = 0;
  const walk = (path) => {
    if (statSync(path).isDirectory()) {
      for (const name of readdirSync(path)) if (name !== 'node_modules') walk(join(path, name));
    } else if (path.endsWith('.ts') && !path.endsWith('.d.ts')) {
      const source = readFileSync(path, 'utf8');
      store(dir, entryName(source), strip(source));
      count++;
    }
  };
  for (const root of roots) walk(root);
  return count;
}
