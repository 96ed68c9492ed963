import { describe, expect, it } from 'vitest';
import { POOL_COORDINATOR_NAME, poolCoordinator } from '../../src/pool/config.ts';
import { locationHintFor } from '../../src/pool/location-hint.ts';

describe('the pool coordinator is placed by the runners’ region', () => {
  it.each([
    ['us-east-1', 'enam'],
    ['us-east-2', 'enam'],
    ['us-west-2', 'wnam'],
    ['us-gov-west-1', 'wnam'],
    ['ca-central-1', 'enam'],
    ['ca-west-1', 'wnam'],
    ['sa-east-1', 'sam'],
    ['eu-west-1', 'weur'],
    ['eu-central-1', 'weur'],
    ['eu-north-1', 'weur'],
    ['me-central-1', 'me'],
    ['il-central-1', 'me'],
    ['af-south-1', 'afr'],
    ['ap-northeast-1', 'apac'],
    ['ap-southeast-1', 'apac'],
    ['ap-southeast-2', 'oc'],
    ['ap-southeast-4', 'oc'],
    ['ap-south-1', 'apac'],
    ['ap-east-1', 'apac'],
    [' EU-WEST-3 ', 'weur'],
  ])('%s → %s', (region, hint) => {
    expect(locationHintFor(region)).toBe(hint);
  });

  it.each([['cn-north-1'], ['mx-central-1'], [''], ['us-east'], ['local'], [undefined]])(
    '%s → no hint (placed by its first request)',
    (region) => {
      expect(locationHintFor(region)).toBeUndefined();
    },
  );

  // Where the object lands cannot be seen in local workerd (it takes the hint and ignores it), so
  // this records what the binding is asked for; the pool's tests in workerd pass it for real.
  const recordingNamespace = () => {
    const gets: unknown[][] = [];
    const ns = {
      idFromName: (name: string) => `id:${name}`,
      get: (...args: unknown[]) => {
        gets.push(args);
        return {};
      },
    };
    return { gets, ns: ns as unknown as Env['POOL_COORDINATOR'] };
  };

  it('asks the binding for the coordinator with the hint of AWS_REGION', () => {
    const { gets, ns } = recordingNamespace();
    poolCoordinator({ POOL_COORDINATOR: ns, AWS_REGION: 'eu-west-1' });
    expect(gets).toEqual([[`id:${POOL_COORDINATOR_NAME}`, { locationHint: 'weur' }]]);
  });

  it('passes no options where the region has no hint', () => {
    const { gets, ns } = recordingNamespace();
    poolCoordinator({ POOL_COORDINATOR: ns, AWS_REGION: 'cn-north-1' });
    expect(gets).toEqual([[`id:${POOL_COORDINATOR_NAME}`, undefined]]);
  });
});
