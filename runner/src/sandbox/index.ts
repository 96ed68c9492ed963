// `@switchyard/runner/sandbox`: the sandbox and the model route, for the escape tests outside
// runner/ that put a real CLI behind the runner's walls.
export { MODEL_URL } from './bwrap.ts';
export { startModelRoute } from './model-proxy.ts';
export { Sandbox, type SandboxConfig, type SandboxMode } from './sandbox.ts';
