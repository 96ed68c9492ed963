import { createApp } from './app.ts';
import { hubRuntime, registerLauncherFactory } from './hub/runtime.ts';
import { ecsLauncherFromEnv } from './launchers/ecs-launcher.ts';
import { launcherProbe } from './launchers/launcher-probe.ts';

export { SessionHub } from './hub/session-hub.ts';
export { PoolCoordinator } from './pool/coordinator.ts';

// Runners are started through the ECS launcher (the local runner host in dev, via ECS_ENDPOINT);
// misconfigured, every launch fails with a reason naming the variables. The backend switch
// probes through the same launcher.
registerLauncherFactory((env) => ecsLauncherFromEnv(env));
const app = createApp({ probeFor: (env) => launcherProbe(hubRuntime().launcherFor(env)) });

export default { fetch: app.fetch } satisfies ExportedHandler<Env>;
