import { describe, expect, it } from 'vitest';
import { synthWithNag } from './helpers.ts';

// cdk-nag's AwsSolutions pack over the whole stack: zero unacknowledged findings, and every
// acknowledgment carries its reason into the template (cdk_nag metadata), so a reviewer reads why.
describe('cdk-nag AwsSolutions', () => {
  for (const [name, props] of [
    ['default', {}],
    ['with a model gateway URL', { modelUrl: 'https://gateway.example/anthropic' }],
    ['with a DNS allow-list', { egressDomains: ['registry.npmjs.org'] }],
  ] as const) {
    it(`no unacknowledged finding (${name})`, () => {
      const { template, violations, error } = synthWithNag(props);
      expect(violations).toEqual([]);
      expect(error).toBeUndefined();
      const suppressions = Object.values(template.Resources).flatMap(
        (r) =>
          (r.Metadata?.cdk_nag as { rules_to_suppress: { id: string; reason: string }[] } | undefined)
            ?.rules_to_suppress ?? [],
      );
      expect(suppressions.length).toBeGreaterThan(0);
      for (const s of suppressions) expect(s.reason.length, s.id).toBeGreaterThan(40);
    });
  }
});
