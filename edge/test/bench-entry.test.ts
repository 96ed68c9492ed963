import { describe, expect, it } from 'vitest';
import * as bench from '../bench/worker.ts';
import * as worker from '../src/index.ts';

// bench/edge serves edge/bench/worker.ts with the Worker's own wrangler.toml, whose bindings name
// the Durable Object classes: one the bench entry does not export makes `wrangler dev` refuse to
// start, and nothing else in CI runs that bench.
describe('the edge bench entry', () => {
  it('exports every Durable Object class the Worker exports', () => {
    const classes = Object.entries(worker).filter(([name, value]) => name !== 'default' && typeof value === 'function');
    expect(classes.map(([name]) => name)).toContain('SessionHub');
    const served: Record<string, unknown> = { ...bench };
    for (const [name, value] of classes) expect(served[name], name).toBe(value);
  });
});
