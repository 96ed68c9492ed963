import type { AgentAdapter } from './adapter.ts';
import type { Backend } from './backend.ts';
import { claudeAdapter } from './claude/adapter.ts';
import { piAdapter } from './pi/adapter.ts';

const ADAPTERS: Record<Backend, AgentAdapter> = { claude: claudeAdapter, pi: piAdapter };

export function adapterFor(backend: Backend): AgentAdapter {
  return ADAPTERS[backend];
}
