// Which build of claude's hook the runner hands claude, which starts it as a new process before
// every tool call that meets it. From source (tests, the local host, `npm start`) there is none: the hook is the
// TypeScript entry in the guard directory, loaded through the strip cache. The bundle the image
// runs replaces this module (runner/scripts/build-bundle.ts) with the path of the one-file
// CommonJS build of that same entry, made in the same build beside the bundle: one file, no ES
// module loader and no strip cache, ~20 ms less per tool call (docs/DESIGN.md "What the hook
// costs a tool call").
export const BUNDLED_CLAUDE_HOOK: string | undefined = undefined;
