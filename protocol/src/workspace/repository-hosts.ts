import ipaddr from 'ipaddr.js';
import { z } from 'zod';

// Which repository hosts may be cloned (docs/DESIGN.md "Workspaces" → "Start from a repository").
// Two rules, both pure: the admin's allow-list (settings `repositoryHosts`), and the address rule —
// a clone never reaches a loopback, private, link-local or otherwise non-public address (the task's
// metadata endpoint, the VPC, the runner's own loopback services). The edge applies both to the URL
// at session creation; names can only be resolved by the runner, which applies the address rule to
// every address a name resolves to and then pins the clone to the address it checked.

/** `public`: a global unicast address. `loopback`: 127/8, ::1, `localhost`. `private`: everything else. */
export type AddressClass = 'public' | 'loopback' | 'private';

/** Classifies an IPv4 or IPv6 address (an IPv4-mapped IPv6 address as the IPv4 one). Not an address: undefined. */
export function classifyAddress(address: string): AddressClass | undefined {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (!ipaddr.isValid(bare)) return undefined;
  const range = ipaddr.process(bare).range();
  if (range === 'unicast') return 'public';
  if (range === 'loopback') return 'loopback';
  // linkLocal, private, uniqueLocal, unspecified, carrierGradeNat, multicast, reserved, 6to4,
  // teredo, NAT64 and the rest: none of them is a public repository server.
  return 'private';
}

/**
 * A URL's host (WHATWG-parsed, so lowercase, punycode, numeric IPv4 forms already dotted) as a
 * literal address's class, `loopback` for `localhost` names, or `name` (known only once resolved).
 */
export function classifyHost(hostname: string): AddressClass | 'name' {
  const host = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  if (host === 'localhost' || host.endsWith('.localhost')) return 'loopback';
  if (host.startsWith('[')) return classifyAddress(host) ?? 'private';
  if (ipaddr.IPv4.isValidFourPartDecimal(host)) return classifyAddress(host) ?? 'private';
  return 'name';
}

/** Whether an address of this class may be cloned from; loopback only where the deployment allows it (the local stack). */
export function addressAllowed(cls: AddressClass, allowLoopback: boolean): boolean {
  return cls === 'public' || (cls === 'loopback' && allowLoopback);
}

const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const HOST_PATTERN = new RegExp(`^(?:\\*|(?:\\*\\.)?${LABEL}(?:\\.${LABEL})*|\\[[0-9a-f:.]+\\])$`);

/** One allow-list entry: `*` (any host the address rule allows), `*.example.org` (its subdomains), or a host name or address literal. */
export const RepositoryHostPatternSchema = z
  .string()
  .max(253, 'at most 253 characters')
  .regex(HOST_PATTERN, 'must be `*`, `*.example.org`, a lowercase host name or an address');

export const RepositoryHostsSchema = z.array(RepositoryHostPatternSchema).max(200, 'at most 200 entries');

/** Whether `hostname` (as the URL gives it) matches one allow-list entry. `*.example.org` matches its subdomains, not example.org itself. */
export function hostMatches(pattern: string, hostname: string): boolean {
  const host = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  if (pattern === '*') return true;
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1;
  return host === pattern;
}

export type RepositoryUrlVerdict = { ok: true } | { ok: false; message: string };

/** The edge's check of a well-formed repository URL (RepositoryUrlSchema) against the allow-list and the address rule. */
export function checkRepositoryHost(
  url: string,
  policy: { hosts: readonly string[]; allowLoopback: boolean },
): RepositoryUrlVerdict {
  const host = new URL(url).hostname;
  const cls = classifyHost(host);
  if (cls !== 'name' && !addressAllowed(cls, policy.allowLoopback)) {
    return {
      ok: false,
      message:
        cls === 'loopback'
          ? `${host} is a loopback host; repositories are cloned only from public hosts`
          : `${host} is a private, link-local or reserved address; repositories are cloned only from public hosts`,
    };
  }
  if (!policy.hosts.some((p) => hostMatches(p, host))) {
    return {
      ok: false,
      message:
        policy.hosts.length === 0
          ? 'cloning repositories is turned off here (settings repositoryHosts is empty)'
          : `${host} is not an allowed repository host (settings repositoryHosts)`,
    };
  }
  return { ok: true };
}
