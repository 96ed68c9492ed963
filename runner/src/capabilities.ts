import type { Capabilities, SpawnOptions } from '@switchyard/protocol';

/**
 * SEAM (sandbox issue): the tool-call guard and the bubblewrap/container
 * boundary. Until that work lands nothing is loaded or checked, and the
 * capability report says so rather than claiming a sandbox.
 */
export interface SandboxSetup {
  capabilities: Capabilities;
  /** Passed straight to the adapter's spawnSpec (claude PreToolUse hook / pi -e extension). */
  guard: SpawnOptions['guard'];
}

export function sandboxSetup(): SandboxSetup {
  return { capabilities: { guard: 'unchecked', sandbox: 'none' }, guard: undefined };
}
