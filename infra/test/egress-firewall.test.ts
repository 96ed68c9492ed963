import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { checkEgressDomains, PROVIDER_HOST } from '../src/egress-firewall.ts';
import { RunnerStack, type RunnerStackProps } from '../src/runner-stack.ts';
import { EDGE_ORIGIN } from './helpers.ts';

// The runners' DNS allow-list, read off the synthesized template.

const synth = (props: Partial<RunnerStackProps> = {}) =>
  Template.fromStack(new RunnerStack(new App(), 'SwitchyardRunners', { edgeOrigin: EDGE_ORIGIN, ...props }));

type Rule = { FirewallDomainListId: { 'Fn::GetAtt': [string, string] }; Priority: number; Action: string };

/** The domain lists' names by logical id, with CloudFormation's joins (region, account) written out. */
function domainLists(template: Template): Record<string, string[]> {
  const lists = template.findResources('AWS::Route53Resolver::FirewallDomainList');
  const text = (d: unknown): string =>
    typeof d === 'string'
      ? d
      : ((d as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1]
          .map((p) => (typeof p === 'string' ? p : `<${(p as { Ref: string }).Ref}>`))
          .join('') as string);
  return Object.fromEntries(
    Object.entries(lists).map(([id, r]) => [id, (r.Properties.Domains as unknown[]).map(text)]),
  );
}

describe('runner egress by name', () => {
  it('without egressDomains nothing filters DNS (names resolve as before)', () => {
    const template = synth();
    for (const type of [
      'AWS::Route53Resolver::FirewallDomainList',
      'AWS::Route53Resolver::FirewallRuleGroup',
      'AWS::Route53Resolver::FirewallRuleGroupAssociation',
    ])
      template.resourceCountIs(type, 0);
  });

  it("with it, the VPC answers the hub, the model API, Fargate's own endpoints and the listed names, and NXDOMAIN for every other", () => {
    const template = synth({ egressDomains: ['registry.npmjs.org', '*.pythonhosted.org'] });
    const lists = domainLists(template);
    const [[allowedId, allowed], [everythingId, everything]] = Object.entries(lists).sort(([, a]) =>
      a.includes('*') ? 1 : -1,
    ) as [[string, string[]], [string, string[]]];
    expect(everything).toEqual(['*']);
    expect(allowed.sort()).toEqual(
      [
        'switchyard.example.com',
        PROVIDER_HOST,
        'api.ecr.<AWS::Region>.amazonaws.com',
        '<AWS::AccountId>.dkr.ecr.<AWS::Region>.amazonaws.com',
        'prod-<AWS::Region>-starport-layer-bucket.s3.<AWS::Region>.amazonaws.com',
        'prod-<AWS::Region>-starport-layer-bucket.s3.amazonaws.com',
        'logs.<AWS::Region>.amazonaws.com',
        'secretsmanager.<AWS::Region>.amazonaws.com',
        'registry.npmjs.org',
        '*.pythonhosted.org',
      ].sort(),
    );

    const [group] = Object.values(template.findResources('AWS::Route53Resolver::FirewallRuleGroup'));
    const rules = ((group?.Properties.FirewallRules ?? []) as Rule[]).toSorted((a, b) => a.Priority - b.Priority);
    expect(rules.map((r) => [r.FirewallDomainListId['Fn::GetAtt'][0], r.Action])).toEqual([
      [allowedId, 'ALLOW'],
      [everythingId, 'BLOCK'],
    ]);
    expect(rules[1]).toMatchObject({ BlockResponse: 'NXDOMAIN' });

    const [vpcId] = Object.keys(template.findResources('AWS::EC2::VPC'));
    template.resourceCountIs('AWS::Route53Resolver::FirewallRuleGroupAssociation', 1);
    template.hasResourceProperties('AWS::Route53Resolver::FirewallRuleGroupAssociation', {
      VpcId: { Ref: vpcId },
      FirewallRuleGroupId: { 'Fn::GetAtt': [Match.anyValue(), 'Id'] },
      MutationProtection: 'DISABLED',
    });
  });

  it("an empty list still filters: the runners reach only what they need themselves; a gateway's host replaces the provider's", () => {
    const template = synth({ egressDomains: [], modelUrl: 'https://gateway.example.com/anthropic' });
    const allowed = Object.values(domainLists(template)).find((l) => !l.includes('*'));
    expect(allowed).toContain('gateway.example.com');
    expect(allowed).not.toContain(PROVIDER_HOST);
    expect(allowed).toHaveLength(8);
  });

  it('a bad name is refused at synth, naming egressDomains', () => {
    expect(() => synth({ egressDomains: ['https://registry.npmjs.org'] })).toThrow(/egressDomains: "https:/);
  });
});

describe('checkEgressDomains (the context value)', () => {
  it('unset stays unset; a comma-separated -c value and a JSON array both give names, trimmed, lower case, once each', () => {
    expect(checkEgressDomains(undefined)).toBeUndefined();
    expect(checkEgressDomains(' Registry.npmjs.org, *.pythonhosted.org,registry.npmjs.org ')).toEqual([
      'registry.npmjs.org',
      '*.pythonhosted.org',
    ]);
    expect(checkEgressDomains(['github.com'])).toEqual(['github.com']);
    expect(checkEgressDomains('')).toEqual([]);
  });

  it.each([
    ['a URL', ['https://github.com']],
    ['a wildcard inside a name', ['git*.com']],
    ['a bare label', ['localhost']],
    ['a name with a port', ['github.com:443']],
    ['a non-string item', [42]],
    ['an object', { github: true }],
  ])('refuses %s, naming egressDomains', (_what, value) => {
    expect(() => checkEgressDomains(value)).toThrow(/^egressDomains/);
  });
});
