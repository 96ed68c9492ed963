import type { AgentAdapter } from '../adapter.ts';
import { PiCodec } from './codec.ts';
import { piSpawnSpec } from './spawn.ts';

export const piAdapter: AgentAdapter = {
  backend: 'pi',
  spawnSpec: piSpawnSpec,
  createCodec: () => new PiCodec(),
};
