import type { AgentAdapter } from '../adapter.ts';
import { ClaudeCodec } from './codec.ts';
import { claudeSpawnSpec } from './spawn.ts';

export const claudeAdapter: AgentAdapter = {
  backend: 'claude',
  spawnSpec: claudeSpawnSpec,
  createCodec: () => new ClaudeCodec(),
};
