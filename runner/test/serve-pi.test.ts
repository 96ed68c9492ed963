import { defineServeContract } from './contract/serve-contract.ts';
import { TestHub } from './contract/test-hub.ts';

defineServeContract('pi', () => TestHub.start());
