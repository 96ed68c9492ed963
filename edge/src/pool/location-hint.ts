// Where the pool coordinator is placed (docs/DESIGN.md "Warm runner pool" → "Where the
// coordinator lives"). A Durable Object is created near the first request that reaches it, which
// for the one coordinator of a deployment is whichever hub or admin asked first, anywhere in the
// world. Its sockets and its launches are with the runners, which all run in one AWS region, and a
// claim goes from a session's hub to the coordinator and on to a runner there: placed by the
// runners, a claim crosses from the hub to the runners' region once, and a pooled runner's link and
// every RunTask stay short. So the coordinator is created with a location hint for the region
// the ECS launcher starts runners in (`AWS_REGION`).

/** Cloudflare's location hint for an AWS region (pure); undefined where none fits (no hint). */
export function locationHintFor(awsRegion: string | undefined): DurableObjectLocationHint | undefined {
  const region = awsRegion?.trim().toLowerCase() ?? '';
  const match = /^([a-z]{2}(?:-gov)?)-([a-z]+)-\d+$/.exec(region);
  if (match === null) return undefined;
  const area = match[1] ?? '';
  const part = match[2] ?? '';
  switch (area) {
    case 'us':
    case 'us-gov':
    case 'ca':
      return part === 'west' ? 'wnam' : 'enam';
    case 'sa':
      return 'sam';
    case 'eu':
      return 'weur';
    case 'me':
    case 'il':
      return 'me';
    case 'af':
      return 'afr';
    case 'ap':
      // Sydney, Melbourne and New Zealand are Oceania. Only the hints Cloudflare documents are
      // used: newer workerd types also list `apac-ne` and `apac-se`.
      return /^ap-southeast-(2|4|6)$/.test(region) ? 'oc' : 'apac';
    default:
      // cn-* (AWS China), mx-* (between the two North American hints) and anything new:
      // placed by its first request, as without a hint.
      return undefined;
  }
}
