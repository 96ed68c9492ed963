// The runners' DNS allow-list (Route 53 Resolver DNS Firewall), on when the deployment names
// `egressDomains`: the VPC's resolver answers only the names a runner needs (the hub, the model
// API, what Fargate pulls and writes at task start) and the operator's list, and NXDOMAIN for
// every other name. The security group already keeps runners to TCP 443, so DNS is the one
// other way out; a name that does not resolve is not reachable over HTTPS by name either.
// What it does not stop (a connection to an IP literal, DNS over HTTPS to one) is in
// docs/DESIGN.md "Deploy decisions".
import { isIP } from 'node:net';
import { Aws } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as route53resolver from 'aws-cdk-lib/aws-route53resolver';
import { Construct } from 'constructs';

/** Where the runners send model calls when the deployment names no gateway (the CLIs' default). */
export const PROVIDER_HOST = 'api.anthropic.com';

/** A DNS name, optionally `*.`-prefixed for its subdomains (DNS Firewall's only wildcard), lower case. */
const DOMAIN = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/;

/**
 * The `egressDomains` context as a list of names, or undefined when it is not set (egress by name
 * stays open). A JSON array in cdk.context.json or a comma-separated `-c egressDomains=…`; an
 * empty list is a deployment whose runners reach only what they need themselves.
 */
export function checkEgressDomains(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  const items = typeof value === 'string' ? value.split(',') : value;
  if (!Array.isArray(items) || items.some((d) => typeof d !== 'string')) {
    throw new Error(
      `egressDomains must be a list of DNS names (a JSON array, or comma-separated after -c); got ${JSON.stringify(value)}`,
    );
  }
  const names = (items as string[]).map((d) => d.trim().toLowerCase()).filter((d) => d !== '');
  const bad = names.find((d) => !DOMAIN.test(d));
  if (bad !== undefined) {
    throw new Error(
      `egressDomains: ${JSON.stringify(bad)} is not a DNS name (e.g. registry.npmjs.org, or *.example.com for its subdomains)`,
    );
  }
  return [...new Set(names)];
}

/**
 * Every name the runners' VPC may resolve: the hub's host, the model API's host, the regional AWS
 * endpoints a Fargate task's start and logs use (the image from this account's ECR and its layer
 * bucket, the log stream, the model key), and the operator's own. Region and account are tokens:
 * the stack is environment-agnostic.
 */
export function egressAllowList(opts: {
  edgeOrigin: string;
  modelUrl?: string | undefined;
  extra: string[];
}): string[] {
  const region = Aws.REGION;
  const hosts = [new URL(opts.edgeOrigin).hostname, new URL(opts.modelUrl ?? `https://${PROVIDER_HOST}`).hostname];
  const aws = [
    `api.ecr.${region}.amazonaws.com`,
    `${Aws.ACCOUNT_ID}.dkr.ecr.${region}.amazonaws.com`,
    // ECR hands out layer URLs on the bucket's regional or its global name.
    `prod-${region}-starport-layer-bucket.s3.${region}.amazonaws.com`,
    `prod-${region}-starport-layer-bucket.s3.amazonaws.com`,
    `logs.${region}.amazonaws.com`,
    `secretsmanager.${region}.amazonaws.com`,
  ];
  return [...new Set([...hosts.filter((h) => isIP(h) === 0), ...aws, ...opts.extra])];
}

export interface EgressDnsFirewallProps {
  vpc: ec2.IVpc;
  /** The names to answer (see `egressAllowList`); every other name gets NXDOMAIN. */
  allow: string[];
  prefix: string;
}

export class EgressDnsFirewall extends Construct {
  constructor(scope: Construct, id: string, props: EgressDnsFirewallProps) {
    super(scope, id);
    const allowed = new route53resolver.CfnFirewallDomainList(this, 'Allowed', {
      name: `${props.prefix}-runner-egress-allowed`,
      domains: props.allow,
    });
    const everything = new route53resolver.CfnFirewallDomainList(this, 'Everything', {
      name: `${props.prefix}-runner-egress-everything`,
      domains: ['*'],
    });
    const rules = new route53resolver.CfnFirewallRuleGroup(this, 'Rules', {
      name: `${props.prefix}-runner-egress`,
      firewallRules: [
        {
          firewallDomainListId: allowed.attrId,
          priority: 100,
          action: 'ALLOW',
          // The hub, the model API and AWS answer through CNAME chains whose names nobody can list.
          firewallDomainRedirectionAction: 'TRUST_REDIRECTION_DOMAIN',
        },
        { firewallDomainListId: everything.attrId, priority: 200, action: 'BLOCK', blockResponse: 'NXDOMAIN' },
      ],
    });
    new route53resolver.CfnFirewallRuleGroupAssociation(this, 'Association', {
      name: `${props.prefix}-runner-egress`,
      firewallRuleGroupId: rules.attrId,
      vpcId: props.vpc.vpcId,
      priority: 101,
      // On, CloudFormation could not remove the association at `cdk destroy`.
      mutationProtection: 'DISABLED',
    });
  }
}
