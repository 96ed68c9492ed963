// Bundles the runner (its bin, its modules, protocol, zod and ws) into an ES module entry,
// runner/dist/switchyard-runner.mjs, and a few chunks beside it (what each command imports on
// demand), which the image runs instead of the bin. Starting from a handful of files instead of
// ~150 modules halves module loading, and dropping zod's 60-odd unused locales
// (the runner's messages are English) shrinks what every runner holds in memory
// (docs/DESIGN.md "Runner memory"). The bin stays the entry point for everything else (tests,
// the local host, npm start): no build step is needed to run the runner from source.
//
// The bundle lives beside the bin (runner/dist, the same depth as runner/bin), and every
// `import.meta.url`/`import.meta.dirname` in the bundled sources is rewritten to the source file's
// own location relative to the bundle: the guard module, the CLIs under
// node_modules and the strip cache are found where they are in a checkout or in the image's /app.
// Usage: node runner/scripts/build-bundle.ts   (prints the bundle's path)
import { readFile, rm } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { build, type Plugin } from 'esbuild';

const RUNNER_DIR = join(import.meta.dirname, '..');
export const BUNDLE_FILE = join(RUNNER_DIR, 'dist', 'switchyard-runner.mjs');

/** `path` relative to the bundle, as an import specifier or a `new URL` base. */
const fromBundle = (path: string) => relative(dirname(BUNDLE_FILE), path).split('\\').join('/');

/** zod registers English itself; the namespace of every locale is what pulls the others in. */
const englishOnly: Plugin = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]v4[\\/](classic|core)[\\/]/.test(args.importer)
        ? { path: join(dirname(args.importer), '..', 'locales', 'en.js'), namespace: 'zod-locales' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(args.path)};`,
      resolveDir: dirname(args.path),
    }));
  },
};

/** Each source keeps its own location: import.meta.url/dirname as seen from where it was written. */
const ownLocation: Plugin = {
  name: 'own-location',
  setup(b) {
    b.onLoad({ filter: /\.(ts|js|mjs)$/ }, async (args) => {
      if (/[\\/]node_modules[\\/]/.test(args.path)) return undefined;
      const source = await readFile(args.path, 'utf8');
      if (!source.includes('import.meta.')) return undefined;
      const url = `new URL(${JSON.stringify(fromBundle(args.path))}, import.meta.url).href`;
      return {
        contents: source.replaceAll('import.meta.url', url).replaceAll('import.meta.dirname', `__own_dirname(${url})`),
        loader: args.path.endsWith('.ts') ? 'ts' : 'js',
      };
    });
  },
};

/**
 * The local runner host stays outside the bundle, imported from its own place at run time: the image
 * leaves it out (the root .dockerignore), and `host` in an image then exits with its
 * clear message as before (runner/src/main.ts).
 */
const hostOutside: Plugin = {
  name: 'host-outside',
  setup(b) {
    b.onResolve({ filter: /^\.\/host\/cli\.ts$/ }, (args) => ({
      path: fromBundle(join(args.resolveDir, args.path)),
      external: true,
    }));
  },
};

export async function buildBundle(): Promise<string> {
  // Chunk names carry a hash: an earlier build's chunks would otherwise stay beside the new ones.
  await rm(dirname(BUNDLE_FILE), { recursive: true, force: true });
  await build({
    entryPoints: [join(RUNNER_DIR, 'bin', 'switchyard-runner.js')],
    outdir: dirname(BUNDLE_FILE),
    outExtension: { '.js': '.mjs' },
    // What main.ts imports on demand (serve, once, probe) goes into chunks of its own beside the
    // entry, loaded by the command that needs it: serve never evaluates probe's offline model.
    splitting: true,
    chunkNames: '[name]-[hash]',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    // Whitespace and syntax only: identifiers stay, so stack traces and class names read as in source.
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'none',
    plugins: [englishOnly, ownLocation, hostOutside],
    logLevel: 'warning',
    // ws is CommonJS and requires Node's builtins; an ES module has no `require` of its own.
    banner: {
      js: [
        "import { createRequire as __own_createRequire } from 'node:module';",
        "import { dirname as __own_dirname_of } from 'node:path';",
        "import { fileURLToPath as __own_fileURLToPath } from 'node:url';",
        'const require = __own_createRequire(import.meta.url);',
        'const __own_dirname = (href) => __own_dirname_of(__own_fileURLToPath(href));',
      ].join('\n'),
    },
  });
  return BUNDLE_FILE;
}

if (process.argv[1] === import.meta.filename) {
  console.log(await buildBundle());
}
